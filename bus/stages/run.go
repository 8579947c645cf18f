package stages

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/lifecycle"
	"github.com/kubebus/kubebus/internal/objjson"
	"github.com/kubebus/kubebus/internal/storedobj"
)

// Subjects are the KUBE_HISTORY subjects Run reads: pods, EndpointSlices,
// the Leases in the proxies' namespace, and gap events.
var Subjects = []string{
	bus.ResourceFilter("", "pods", ""),
	bus.ResourceFilter(discoveryGroup, "endpointslices", ""),
	bus.ResourceFilter(coordinationGroup, "leases", lifecycle.ProxyLeaseNamespace),
	bus.GapSubject,
}

// Config configures Run.
type Config struct {
	// JetStream is the bus connection (required).
	JetStream jetstream.JetStream
	// Registerer receives the metrics (none when nil).
	Registerer prometheus.Registerer
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Limits bound the tracker.
	Limits Limits
	// CheckEvery is how often Run checks that KUBE_HISTORY is still the
	// stream it reads, not one created again since (default 10s).
	CheckEvery time.Duration
}

// DefaultCheckEvery is Config.CheckEvery's default.
const DefaultCheckEvery = 10 * time.Second

// Retry delays after the bus fails.
const (
	minRetry = time.Second
	maxRetry = 30 * time.Second
)

// errRecreated: KUBE_HISTORY is not the stream being read any more.
var errRecreated = errors.New("stream " + bus.HistoryStream + " was created again")

// Run registers the stage metrics on cfg.Registerer and keeps them up to
// date from the messages KUBE_HISTORY stores from its start on (also those
// stored while the stream was still being made) until ctx ends, then returns
// nil. It reads with an ephemeral ordered consumer and outlives NATS
// outages, retrying with backoff; when the stream is created again, it
// clears the tracker and follows the new stream's new messages. It returns
// an error only when cfg is incomplete or the metrics cannot be
// registered.
//
// After ctx ends, Run returns within moments, except while NATS is
// unreachable: the consumer's one reset attempt in flight may take up to
// its 10 s request timeout.
func Run(ctx context.Context, cfg Config) error {
	if cfg.JetStream == nil {
		return errors.New("stages: no JetStream connection")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.CheckEvery <= 0 {
		cfg.CheckEvery = DefaultCheckEvery
	}
	m, err := NewMetrics(cfg.Registerer)
	if err != nil {
		return err
	}
	r := &reader{js: cfg.JetStream, log: cfg.Logger, every: cfg.CheckEvery, t: NewTracker(cfg.Limits), m: m, since: time.Now()}
	delay := minRetry
	for {
		progressed, err := r.follow(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errRecreated):
			delay = minRetry
			continue
		case progressed:
			delay = minRetry
		}
		r.log.Warn("reading the bus for the pod stage metrics; retrying", "err", err, "in", delay)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(2*delay, maxRetry)
	}
}

// reader is Run's state across consumers.
type reader struct {
	js    jetstream.JetStream
	log   *slog.Logger
	every time.Duration
	t     *Tracker
	m     *Metrics
	born  time.Time // when the stream read was created; zero before the first
	// since is when Run started: the first read starts there, so pods
	// created while the stream was not there yet (the API server's start)
	// are followed all the same.
	since time.Time
	seq   uint64 // the last stream sequence read (or skipped)
}

// changed reports whether info is of another stream than the one read.
func (r *reader) changed(info *jetstream.StreamInfo) bool {
	return !info.Created.Equal(r.born) || info.State.LastSeq < r.seq
}

// reset clears the tracker, counting the pods it followed.
func (r *reader) reset(why string, args ...any) {
	out := r.t.Reset()
	r.log.Warn(why+"; the pod stage tracker starts again", append(args, "podsDropped", out.Dropped[DropGap])...)
	r.m.Record(out)
}

// follow reads the stream with one ordered consumer until ctx ends (nil),
// the consumer fails, or the stream is found created again
// (errRecreated). progressed says whether it read anything.
func (r *reader) follow(ctx context.Context) (progressed bool, err error) {
	st, err := r.js.Stream(ctx, bus.HistoryStream)
	if err != nil {
		return false, fmt.Errorf("opening stream %s: %w", bus.HistoryStream, err)
	}
	info := st.CachedInfo()
	occ := jetstream.OrderedConsumerConfig{FilterSubjects: Subjects, DeliverPolicy: jetstream.DeliverNewPolicy,
		// Resets are Run's: one attempt, then Next fails and Run
		// retries, checking the stream first.
		MaxResetAttempts: 1}
	switch {
	case r.born.IsZero():
		occ.DeliverPolicy, occ.OptStartTime = jetstream.DeliverByStartTimePolicy, &r.since
	case r.changed(info):
		r.reset("stream "+bus.HistoryStream+" was created again", "created", info.Created)
	case info.State.FirstSeq > r.seq+1:
		r.reset("messages of "+bus.HistoryStream+" were removed before they were read", "lastRead", r.seq, "firstSeq", info.State.FirstSeq)
	default:
		occ.DeliverPolicy, occ.OptStartSeq = jetstream.DeliverByStartSequencePolicy, r.seq+1
	}
	r.born = info.Created
	cons, err := st.OrderedConsumer(ctx, occ)
	if err != nil {
		return false, fmt.Errorf("creating an ordered consumer on %s: %w", bus.HistoryStream, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", bus.HistoryStream, err)
	}
	defer func() {
		it.Stop()
		removeConsumer(ctx, r.js, cons)
	}()
	if ci := cons.CachedInfo(); ci != nil && occ.DeliverPolicy == jetstream.DeliverNewPolicy {
		r.seq = ci.Delivered.Stream // where new messages start
	}
	checked := time.Now()
	for {
		nctx, cancel := context.WithTimeout(ctx, r.every)
		msg, err := it.Next(jetstream.NextContext(nctx))
		cancel()
		switch {
		case ctx.Err() != nil:
			return progressed, nil
		case errors.Is(err, context.DeadlineExceeded):
		case err != nil:
			return progressed, fmt.Errorf("reading %s: %w", bus.HistoryStream, err)
		default:
			r.handle(msg)
			progressed = true
		}
		if time.Since(checked) >= r.every {
			checked = time.Now()
			if err := r.check(ctx, st); err != nil {
				return progressed, err
			}
		}
	}
}

// check asks whether the stream is still the one read. The ordered
// consumer follows a stream deleted and created again at the sequence
// after the last it read, which the new stream reaches late or never.
func (r *reader) check(ctx context.Context, st jetstream.Stream) error {
	info, err := st.Info(ctx)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("stream %s: %w", bus.HistoryStream, err)
	case err != nil:
		r.log.Debug("checking the stream", "stream", bus.HistoryStream, "err", err)
		return nil // the consumer reports lasting trouble
	case r.changed(info):
		return errRecreated
	}
	return nil
}

// handle feeds one message to the tracker.
func (r *reader) handle(msg jetstream.Msg) {
	md, err := msg.Metadata()
	if err != nil {
		r.log.Warn("skipping a message without metadata", "subject", msg.Subject(), "err", err)
		return
	}
	r.seq = md.Sequence.Stream
	ev, err := bus.Decode(msg.Data())
	if err != nil {
		r.log.Warn("skipping a message that is not an event", "subject", msg.Subject(), "seq", md.Sequence.Stream, "err", err)
		return
	}
	if ev.Type == bus.Gap {
		r.reset("the bus announced a gap", "from", ev.From, "to", ev.To)
		return
	}
	e := Event{Type: ev.Type, Revision: ev.Revision, Key: ev.Key(), Time: md.Timestamp}
	if r.t.Needs(e.Type, e.Key) {
		if err := decodeObject(&e, ev.Stored()); err != nil {
			r.log.Warn("skipping an event whose object does not decode", "subject", msg.Subject(), "revision", ev.Revision, "err", err)
			return
		}
	}
	r.m.Record(r.t.Apply(e))
}

// decodeObject decodes an event's object, as stored, into the field of
// its kind.
func decodeObject(e *Event, data []byte) error {
	var err error
	switch kindOf(e.Key) {
	case podKind:
		e.Pod, err = decodeStagePod(data)
	case sliceKind:
		e.Slice = &discoveryv1.EndpointSlice{}
		err = storedobj.Decode(data, e.Slice)
	case leaseKind:
		e.Lease = &coordinationv1.Lease{}
		err = storedobj.Decode(data, e.Lease)
	}
	if err != nil {
		return fmt.Errorf("decoding %s %s/%s: %w", e.Key.GroupResource(), e.Key.Namespace, e.Key.Name, err)
	}
	return nil
}

// stagePod is what of a pod tells its stages (lifecycle.PodReached):
// decoding only these fields skips the metadata, volumes and the rest
// without allocating them.
type stagePod struct {
	Spec struct {
		NodeName   string `json:"nodeName"`
		Containers []struct {
			Name string `json:"name"`
		} `json:"containers"`
	} `json:"spec"`
	Status corev1.PodStatus `json:"status"`
}

func decodeStagePod(data []byte) (*corev1.Pod, error) {
	if storedobj.IsProtobuf(data) {
		// Protobuf has no partial decoding: the whole pod it is.
		pod := &corev1.Pod{}
		return pod, storedobj.Decode(data, pod)
	}
	var sp stagePod
	if err := objjson.Unmarshal(data, &sp); err != nil {
		return nil, err
	}
	pod := &corev1.Pod{Status: sp.Status}
	pod.Spec.NodeName = sp.Spec.NodeName
	for _, c := range sp.Spec.Containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c.Name})
	}
	return pod, nil
}

// removeConsumer deletes the ordered consumer now rather than leave it to
// the server's inactivity timeout, also when ctx has ended.
func removeConsumer(ctx context.Context, js jetstream.JetStream, cons jetstream.Consumer) {
	ci := cons.CachedInfo()
	if ci == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = js.DeleteConsumer(ctx, bus.HistoryStream, ci.Name) // best effort: it expires anyway
}

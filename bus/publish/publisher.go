package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/internal/storedobj"
)

// Config configures a Publisher.
type Config struct {
	Source  Source
	Elector Elector
	// JetStream is the bus connection (its NATS connection should reconnect
	// forever; the publisher retries each message until it is stored).
	JetStream jetstream.JetStream
	Limits    bus.StreamLimits
	Logger    *slog.Logger
	Metrics   *Metrics
	// StallWindow is how long the bus may miss an etcd revision before
	// Ready fails (default DefaultStallWindow).
	StallWindow time.Duration
}

func (c *Config) validate() error {
	if c.Source == nil || c.Elector == nil || c.JetStream == nil {
		return errors.New("publish: Source, Elector and JetStream are required")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics(nil)
	}
	if c.StallWindow <= 0 {
		c.StallWindow = DefaultStallWindow
	}
	return nil
}

// Publisher republishes etcd changes while it leads.
type Publisher struct {
	cfg Config
	js  jetstream.JetStream
	log *slog.Logger
	m   *Metrics

	// cursor, valid while leading: what KUBE_HISTORY is known to hold
	lastRev int64
	lastSeq uint64
	chains  map[string]int64 // chain filter -> revision of its last event (sent)
	floor   int64            // chains unknown to the map start after this revision
	// nodeFloor is floor for KUBE_NODEPODS's chains alone, after a GAP
	// on that stream only (nodeGap).
	nodeFloor int64

	// the pipeline (pipeline.go): what was sent and not yet confirmed
	sentRev  int64
	sentSeq  uint64
	inflight []*pending
	// epoch counts the pipeline's resyncs; it makes the state messages a
	// resync sends again new messages rather than deduplicated ones.
	epoch      int
	resumeFrom int64
	// failedRev, when not 0, is the first revision not wholly stored
	// when a stream was found lost (see nodeGap).
	failedRev int64

	lastProgress time.Time
	// resyncWait backs off resyncs that follow each other without
	// anything being stored in between (a full store).
	resyncWait time.Duration
	// created is each stream's creation time when the cursor was read; a
	// stream missing or created again since was lost with what it held.
	created map[string]time.Time

	health *health
}

// New builds a Publisher.
func New(cfg Config) (*Publisher, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Publisher{cfg: cfg, js: cfg.JetStream, log: cfg.Logger, m: cfg.Metrics, health: newHealth(cfg.Logger, cfg.Metrics, cfg.StallWindow)}, nil
}

// publishTimeout bounds one publish attempt, so a request lost while NATS
// restarts is retried instead of waiting for the caller's deadline.
const publishTimeout = 5 * time.Second

// errFenced: another publisher wrote to the stream; this one must stop.
var errFenced = errors.New("publish: another publisher is writing; stepping down")

// Run campaigns and, while leading, publishes, until ctx ends.
func (p *Publisher) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		done, resign, err := p.cfg.Elector.Campaign(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			p.log.Warn("publisher campaign failed; retrying", "err", err)
			sleep(ctx, time.Second)
			continue
		}
		p.log.Info("publisher leading")
		p.m.leader.Set(1)
		lctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-done:
				cancel()
			case <-lctx.Done():
			}
		}()
		err = p.lead(lctx)
		cancel()
		p.m.leader.Set(0)
		p.inflight = nil
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = resign(rctx)
		rcancel()
		if ctx.Err() != nil {
			return nil
		}
		p.log.Warn("publisher stopped leading", "err", err)
		sleep(ctx, 500*time.Millisecond)
	}
	return nil
}

// lead publishes until leadership or ctx is lost.
func (p *Publisher) lead(ctx context.Context) error {
	// Behind from the start, until the cursor says otherwise: streams
	// that cannot be created (no room for them) stall the bus too.
	p.health.lead(true, 0)
	defer p.health.lead(false, 0)
	pollCtx, stopPoll := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() { defer close(polled); p.pollRevision(pollCtx) }()
	defer func() { stopPoll(); <-polled }()
	if err := p.openStreams(ctx); err != nil {
		return err
	}
	p.health.done(p.lastRev)
	p.log.Debug("publisher resuming", "lastRevision", p.lastRev, "lastSequence", p.lastSeq)
	for ctx.Err() == nil {
		err := p.round(ctx)
		if err == nil || ctx.Err() != nil {
			continue
		}
		// A stream that is gone or new explains most failures, a fence
		// included (a new stream's sequences start again): check first.
		switch cerr := p.retryAll(ctx, "checking the streams", func() error { return p.checkStreams(ctx) }); {
		case errors.Is(cerr, errStreamsReset):
			// Everything before the first revision not confirmed was
			// stored; a KUBE_NODEPODS lost on its own is filled again
			// from there.
			var rs *resyncError
			switch {
			case errors.As(err, &rs):
				p.failedRev = rs.rev
			case len(p.inflight) > 0:
				p.failedRev = p.inflight[0].rev
			}
			if err := p.openStreams(ctx); err != nil {
				return err
			}
			continue
		case cerr != nil:
			return cerr
		}
		var rs *resyncError
		switch {
		case errors.Is(err, errFenced):
			return err
		case !errors.As(err, &rs):
			// Retries gave up on an error that looked like a missing
			// stream, or reseeding failed: send again from the cursor.
			rs = &resyncError{err: err}
		}
		if err := p.resync(ctx, rs); err != nil && ctx.Err() == nil {
			// The next round fails too, and checks the streams again.
			p.log.Debug("reading the cursor failed", "err", err)
		}
	}
	return ctx.Err()
}

// round follows etcd's changes from the cursor until the watch ends (nil)
// or publishing fails.
func (p *Publisher) round(ctx context.Context) error {
	from := p.lastRev
	if p.resumeFrom > 0 {
		from, p.resumeFrom = p.resumeFrom, 0
	}
	if from == 0 {
		from = 1
	}
	cctx, cancel := context.WithCancel(ctx)
	changes, wait := p.cfg.Source.Changes(cctx, from)
	err := p.pump(ctx, changes)
	cancel()
	for range changes {
		// Drained so that the source's goroutine ends before wait.
	}
	if err != nil {
		return err
	}
	err = wait()
	if errors.Is(err, ErrCompacted) {
		return p.reseed(ctx, "etcd compacted revisions the bus never received")
	}
	if ctx.Err() == nil {
		p.log.Warn("etcd watch ended; resuming", "err", err)
		sleep(ctx, 200*time.Millisecond)
	}
	return nil
}

// revisionEvery is how often a leader reads etcd's revision to tell how
// far behind the bus is, whether or not publishing works.
const revisionEvery = time.Second

func (p *Publisher) pollRevision(ctx context.Context) {
	t := time.NewTicker(revisionEvery)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, revisionEvery)
		rev, err := p.cfg.Source.Revision(rctx)
		cancel()
		if err == nil {
			p.health.etcd(rev)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// loadCursor reads the last published revision and stream sequence.
func (p *Publisher) loadCursor(ctx context.Context) error {
	st, err := p.js.Stream(ctx, bus.HistoryStream)
	if err != nil {
		return fmt.Errorf("opening %s: %w", bus.HistoryStream, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return fmt.Errorf("reading %s info: %w", bus.HistoryStream, err)
	}
	p.lastRev, p.lastSeq, p.chains, p.floor, p.nodeFloor = 0, info.State.LastSeq, map[string]int64{}, 0, 0
	defer func() { p.sentRev, p.sentSeq = p.lastRev, p.lastSeq }()
	// The last message carrying a revision is the resume point; anything
	// after it without one was not written by a publisher and is skipped.
	for seq, looked := info.State.LastSeq, 0; seq >= info.State.FirstSeq && seq > 0 && looked < maxCursorScan; seq, looked = seq-1, looked+1 {
		msg, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading message %d of %s: %w", seq, bus.HistoryStream, err)
		}
		if rev := bus.HeaderInt(msg.Header, bus.HeaderRevision); rev > 0 {
			p.lastRev = rev
			if seq != info.State.LastSeq {
				p.log.Warn("messages without a revision at the end of the history stream; ignoring them", "from", seq+1, "to", info.State.LastSeq)
			}
			return nil
		}
	}
	if info.State.Msgs > 0 {
		return fmt.Errorf("no message with a %s header among the last %d of %s", bus.HeaderRevision, maxCursorScan, bus.HistoryStream)
	}
	return nil
}

// maxCursorScan bounds how far back the cursor looks past foreign messages.
const maxCursorScan = 10000

// objectKey parses /registry/<group>/<resource>/[<namespace>/]<name>.
func objectKey(key string) (bus.ObjectKey, bool) {
	rest, ok := strings.CutPrefix(key, "/registry/")
	if !ok {
		return bus.ObjectKey{}, false
	}
	parts := strings.Split(rest, "/")
	var k bus.ObjectKey
	switch len(parts) {
	case 3:
		k = bus.ObjectKey{Group: parts[0], Resource: parts[1], Name: parts[2]}
	case 4:
		k = bus.ObjectKey{Group: parts[0], Resource: parts[1], Namespace: parts[2], Name: parts[3]}
	default:
		return bus.ObjectKey{}, false
	}
	if k.Group == "core" {
		k.Group = ""
	}
	for _, s := range parts {
		if s == "" {
			return bus.ObjectKey{}, false
		}
	}
	return k, true
}

// send writes one change to every stream it belongs on without waiting
// for the acks, and returns what settle must confirm (nil when the change
// is not published). The history message is fenced on the sequence the
// previous one sent gets.
func (p *Publisher) send(ctx context.Context, ch Change) (*pending, error) {
	k, ok := objectKey(ch.Key)
	if !ok {
		p.m.skipped.Inc()
		p.log.Warn("not publishing a key outside the object layout", "key", ch.Key, "revision", ch.Revision)
		return nil, nil
	}
	ev := bus.Event{Revision: ch.Revision, PrevRevision: p.sentRev, Group: k.Group, Resource: k.Resource, Namespace: k.Namespace, Name: k.Name}
	switch {
	case ch.Delete:
		ev.Type, ev.PreviousRevision = bus.Deleted, ch.PrevRevision
		ev.SetStored(ch.Prev)
		if len(ch.Prev) == 0 {
			// etcd no longer holds the deleted value (compacted): the key is
			// still enough for consumers to drop the object.
			ev.Object = skeleton(k)
		}
	case ch.Created:
		ev.Type = bus.Added
		ev.SetStored(ch.Value)
	default:
		// The previous state is not sent: readers that want it (tap) find
		// it in the object's previous message on KUBE_HISTORY, named by
		// PreviousRevision. Sending it would double every update's bytes
		// on every stream and every history reader.
		ev.Type, ev.PreviousRevision = bus.Modified, ch.PrevRevision
		ev.SetStored(ch.Value)
	}
	// Encode checks the stored value (JSON, or a protobuf envelope), so it
	// is not scanned once more beforehand.
	data, err := bus.Encode(&ev)
	if err != nil && ev.Type == bus.Deleted && len(ev.ObjectProto) > 0 {
		// A deleted pod whose last state does not parse: the key is
		// enough for consumers to drop it.
		ev.Object, ev.ObjectProto = skeleton(k), nil
		data, err = bus.EncodeLean(&ev)
	}
	if len(ev.Stored()) == 0 || err != nil && !storedobj.Valid(ev.Stored()) {
		p.m.skipped.Inc()
		p.log.Warn("not publishing a value that is neither JSON nor protobuf", "key", ch.Key, "revision", ch.Revision)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("encoding revision %d: %w", ch.Revision, err)
	}
	pd := &pending{rev: ch.Revision, start: time.Now()}
	histSeq := p.sentSeq
	if ch.Revision > p.sentRev {
		resChain := bus.ResourceFilter(k.Group, k.Resource, "")
		prev, err := p.chainPrev(ctx, bus.HistoryStream, resChain)
		if err != nil {
			return nil, err
		}
		pd.hist = eventMsg(bus.HistorySubject(k), &ev, data, prev)
		histSeq = p.sentSeq + 1 // fenced on the last sequence: stored right after it, or not at all
		pd.histSeq = histSeq
		pd.histAck = p.sendAsync(pd.hist, jetstream.WithMsgID("r"+strconv.FormatInt(ch.Revision, 10)), jetstream.WithExpectLastSequence(p.sentSeq))
		p.sentSeq, p.sentRev = histSeq, ch.Revision
		p.chains[resChain] = ch.Revision
	}
	if k.Group == "" && k.Resource == "pods" {
		if pd.node, err = p.sendNode(ctx, k, ch, &ev, data); err != nil {
			return nil, err
		}
	}
	pd.state = eventMsg(bus.StateSubject(k), &ev, data, 0)
	pd.state.Header.Set(bus.HeaderHistSeq, strconv.FormatUint(histSeq, 10))
	pd.stateAck = p.sendAsync(pd.state, p.stateOpts(pd.state, ch.Revision, ev.Type == bus.Deleted)...)
	return pd, nil
}

// skeleton is the smallest object JSON naming k.
func skeleton(k bus.ObjectKey) json.RawMessage {
	m := map[string]any{"metadata": map[string]string{"name": k.Name, "namespace": k.Namespace}}
	data, _ := json.Marshal(m)
	return data
}

// progressEvery bounds how often an idle publisher records progress.
const progressEvery = 30 * time.Second

// progress records on KUBE_HISTORY that every object change up to rev is
// published, when nothing else moved the cursor for a while, so a restart
// resumes after revisions of keys that are not objects (the election's)
// instead of from a revision etcd may have compacted.
func (p *Publisher) progress(ctx context.Context, rev int64) error {
	if rev <= p.lastRev || time.Since(p.lastProgress) < progressEvery {
		return nil
	}
	p.lastProgress = time.Now()
	ev := bus.Event{Type: bus.Progress, Revision: rev, PrevRevision: p.lastRev}
	data, _ := bus.Encode(&ev)
	return p.publishHistory(ctx, eventMsg(bus.ProgressSubject, &ev, data, 0), rev, "/progress", nil)
}

func eventMsg(subject string, ev *bus.Event, data []byte, chainPrev int64) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = data
	m.Header.Set(bus.HeaderRevision, strconv.FormatInt(ev.Revision, 10))
	m.Header.Set(bus.HeaderType, string(ev.Type))
	if ev.Resource != "" {
		m.Header.Set(bus.HeaderResource, ev.Key().GroupResource())
	}
	m.Header.Set(bus.HeaderChainPrev, strconv.FormatInt(chainPrev, 10))
	return m
}

// publishHistory appends msg to KUBE_HISTORY fenced on the last sequence.
func (p *Publisher) publishHistory(ctx context.Context, msg *nats.Msg, rev int64, idSuffix string, first jetstream.PubAckFuture) error {
	id := "r" + strconv.FormatInt(rev, 10) + idSuffix
	return p.retry(ctx, "publishing revision "+strconv.FormatInt(rev, 10), func() error {
		var ack *jetstream.PubAck
		var err error
		if first != nil {
			ack, err = awaitAck(ctx, first)
			first = nil
		} else {
			actx, cancel := context.WithTimeout(ctx, publishTimeout)
			ack, err = p.js.PublishMsg(actx, msg, jetstream.WithMsgID(id), jetstream.WithExpectLastSequence(p.lastSeq))
			cancel()
		}
		if err != nil {
			var apiErr *jetstream.APIError
			if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
				return permanent(p.checkFence(ctx, rev))
			}
			return err
		}
		if ack.Duplicate {
			// Stored before (a retry whose ack was lost): the stream holds it.
			if err := p.loadCursorKeepChains(ctx); err != nil {
				return err
			}
			return nil
		}
		p.lastSeq, p.lastRev = ack.Sequence, rev
		p.sentSeq, p.sentRev = p.lastSeq, p.lastRev
		p.health.done(rev)
		return nil
	})
}

// checkFence decides what a wrong-last-sequence answer means.
func (p *Publisher) checkFence(ctx context.Context, rev int64) error {
	if err := p.loadCursorKeepChains(ctx); err != nil {
		return err
	}
	if p.lastRev >= rev {
		return errFenced
	}
	return fmt.Errorf("publish: stream moved under revision %d (now at %d): %w", rev, p.lastRev, errFenced)
}

func (p *Publisher) loadCursorKeepChains(ctx context.Context) error {
	chains, floor, nodeFloor := p.chains, p.floor, p.nodeFloor
	err := p.loadCursor(ctx)
	p.chains, p.floor, p.nodeFloor = chains, floor, nodeFloor
	return err
}

// chainPrev returns the revision of the last event on a chain (a subject
// filter of a stream), loading it from the stream the first time.
func (p *Publisher) chainPrev(ctx context.Context, stream, filter string) (int64, error) {
	if rev, ok := p.chains[filter]; ok {
		return rev, nil
	}
	var rev int64
	err := p.retry(ctx, "reading chain "+filter, func() error {
		st, err := p.js.Stream(ctx, stream)
		if err != nil {
			return err
		}
		msg, err := st.GetLastMsgForSubject(ctx, filter)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			rev = 0
			return nil
		}
		if err != nil {
			return err
		}
		rev = bus.HeaderInt(msg.Header, bus.HeaderRevision)
		return nil
	})
	floor := p.floor
	if stream == bus.NodePodsStream {
		floor = max(floor, p.nodeFloor)
	}
	rev = max(rev, floor)
	p.chains[filter] = rev
	return rev, err
}

// publishState writes the latest state of an object (idempotent).
func (p *Publisher) publishState(ctx context.Context, msg *nats.Msg, rev int64, tombstone bool, first jetstream.PubAckFuture) error {
	return p.retry(ctx, "publishing state of revision "+strconv.FormatInt(rev, 10), func() error {
		if first != nil {
			_, err := awaitAck(ctx, first)
			first = nil
			return err
		}
		actx, cancel := context.WithTimeout(ctx, publishTimeout)
		defer cancel()
		_, err := p.js.PublishMsg(actx, msg, p.stateOpts(msg, rev, tombstone)...)
		return err
	})
}

// stateOpts are the options of a state message: an ID naming the revision
// and subject (and the pipeline's epoch after a resync, so that the state
// messages sent again are stored again, in order).
func (p *Publisher) stateOpts(msg *nats.Msg, rev int64, tombstone bool) []jetstream.PublishOpt {
	id := "r" + strconv.FormatInt(rev, 10) + "/" + msg.Subject
	if p.epoch > 0 {
		id += "/e" + strconv.Itoa(p.epoch)
	}
	opts := []jetstream.PublishOpt{jetstream.WithMsgID(id)}
	if tombstone {
		opts = append(opts, jetstream.WithMsgTTL(bus.TombstoneTTL))
	}
	return opts
}

// sendAsync sends a publish without waiting for its ack; a failure to
// send returns nil, and the caller's synchronous retry publishes it.
func (p *Publisher) sendAsync(msg *nats.Msg, opts ...jetstream.PublishOpt) jetstream.PubAckFuture {
	f, err := p.js.PublishMsgAsync(msg, opts...)
	if err != nil {
		return nil
	}
	return f
}

// awaitAck waits for the ack of an asynchronous publish, at most
// publishTimeout.
func awaitAck(ctx context.Context, f jetstream.PubAckFuture) (*jetstream.PubAck, error) {
	if f == nil {
		return nil, errNoFuture
	}
	t := time.NewTimer(publishTimeout)
	defer t.Stop()
	select {
	case ack := <-f.Ok():
		return ack, nil
	case err := <-f.Err():
		return nil, err
	case <-t.C:
		return nil, errors.New("publish: no ack within " + publishTimeout.String())
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

package informer

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/internal/storedobj"
)

// errNotOurs: a well-formed event of other objects (skipped without being
// counted as malformed).
var errNotOurs = errors.New("informer: not this informer's objects")

// decode parses an object event into T, with resourceVersion set to the
// event's revision. A deletion whose object does not decode is still
// returned (haveObj false): the object is gone either way.
func (i *Informer[T]) decode(data []byte) (ev *bus.Event, obj T, haveObj bool, err error) {
	ev, err = bus.Decode(data)
	if err != nil {
		return nil, obj, false, err
	}
	if ev.Type == bus.Gap {
		return nil, obj, false, errors.New("informer: unexpected gap event")
	}
	if ev.Group != i.cfg.Group || ev.Resource != i.cfg.Resource {
		return nil, obj, false, fmt.Errorf("informer: event of %s on a %s subject", groupResource(ev.Group, ev.Resource), groupResource(i.cfg.Group, i.cfg.Resource))
	}
	if i.cfg.Namespace != "" && ev.Namespace != i.cfg.Namespace {
		return ev, obj, false, errNotOurs
	}
	obj = i.cfg.New()
	err = storedobj.Decode(ev.Stored(), obj)
	if err == nil && meta(obj).GetName() != ev.Name {
		err = fmt.Errorf("object is named %q", meta(obj).GetName())
	}
	if err != nil {
		var zero T
		if ev.Type == bus.Deleted {
			return ev, zero, false, nil
		}
		return nil, zero, false, fmt.Errorf("informer: decoding %s %s/%s at revision %d: %w", ev.Type, ev.Namespace, ev.Name, ev.Revision, err)
	}
	meta(obj).SetResourceVersion(strconv.FormatInt(ev.Revision, 10))
	return ev, obj, true, nil
}

// ours reports whether a live-stream subject is on this informer's chain.
func (i *Informer[T]) ours(subject string) bool {
	return strings.HasPrefix(subject, strings.TrimSuffix(i.cfg.liveFilter(), ">"))
}

// readState reads the latest event of every object from KUBE_STATE with a
// throwaway consumer (deliver last per subject), until it has read as many
// messages as were pending when the consumer was made. Objects written
// after that are the live consumer's business.
func (i *Informer[T]) readState(ctx context.Context) (*snapshot[T], error) {
	actx, cancel := apiCtx(ctx)
	defer cancel()
	st, err := i.cfg.JetStream.Stream(actx, bus.StateStream)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", bus.StateStream, err)
	}
	// The snapshot consumer is named after the durable (on another
	// stream) and filtered in the create request's subject, so the bus's
	// permissions can name it; one left over by a process that died is
	// deleted first, as it may have delivered part of the state already.
	if err := st.DeleteConsumer(actx, i.durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("deleting the snapshot consumer %s: %w", i.durable, err)
	}
	cons, err := st.CreateConsumer(actx, jetstream.ConsumerConfig{
		Name:              i.durable,
		Description:       "kubebus informer snapshot " + i.durable,
		DeliverPolicy:     jetstream.DeliverLastPerSubjectPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		FilterSubject:     i.cfg.stateFilter(),
		MemoryStorage:     true,
		InactiveThreshold: time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("creating a snapshot consumer on %s: %w", bus.StateStream, err)
	}
	name := cons.CachedInfo().Name
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = st.DeleteConsumer(dctx, name)
	}()
	snap := newSnapshot[T]()
	pending := cons.CachedInfo().NumPending
	if pending == 0 {
		return snap, nil
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1024))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", bus.StateStream, err)
	}
	defer it.Stop()

	// Decoding dominates; decode in parallel. Each subject has one latest
	// message and snapshot.add keeps the newest, so order does not matter.
	type decoded struct {
		k    objKey
		obj  T
		rev  int64
		tomb bool
		bad  bool
	}
	in := make(chan []byte, 256)
	out := make(chan decoded, 256)
	var workers sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), 8) {
		workers.Go(func() {
			for data := range in {
				ev, obj, haveObj, err := i.decode(data)
				switch {
				case errors.Is(err, errNotOurs):
				case err != nil:
					i.count.inc(outMalformed)
					i.log.Debug("skipping a malformed state message", "err", err)
					if ev != nil {
						out <- decoded{k: objKey{ev.Namespace, ev.Name}, bad: true}
					}
				default:
					out <- decoded{k: objKey{ev.Namespace, ev.Name}, obj: obj, rev: ev.Revision, tomb: ev.Type == bus.Deleted || !haveObj}
				}
			}
		})
	}
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for d := range out {
			if d.bad {
				snap.bad[d.k] = struct{}{}
				continue
			}
			snap.add(d.k, d.obj, d.rev, d.tomb)
		}
	}()
	readErr := func() error {
		defer close(in)
		for n, idle := uint64(0), 0; n < pending; {
			msg, err := it.Next(jetstream.NextMaxWait(time.Second))
			if errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil && idle < 30 {
				// Messages counted at creation can vanish (an expired
				// tombstone): stop when nothing is left.
				idle++
				actx, cancel := apiCtx(ctx)
				ci, err := cons.Info(actx)
				cancel()
				if err != nil {
					return fmt.Errorf("reading the snapshot consumer: %w", err)
				}
				if ci.NumPending == 0 {
					return nil
				}
				continue
			}
			if err != nil {
				return fmt.Errorf("reading %s after %d of %d messages: %w", bus.StateStream, n, pending, errors.Join(err, ctx.Err()))
			}
			n, idle = n+1, 0
			in <- msg.Data()
			if md, err := msg.Metadata(); err == nil && md.NumPending == 0 {
				return nil
			}
		}
		return nil
	}()
	workers.Wait()
	close(out)
	<-collected
	if readErr != nil {
		return nil, readErr
	}
	return snap, nil
}

// start reads the state and opens the live consumer where the state leaves
// off: it reads the live stream's last sequence H0 first, then the state
// (which is at least as new), and follows from H0+1. Events the state
// already holds are skipped by revision.
func (i *Informer[T]) start(ctx context.Context) error {
	js := i.cfg.JetStream
	return i.retry(ctx, "loading the cache", func() error {
		actx, cancel := apiCtx(ctx)
		defer cancel()
		live, err := js.Stream(actx, i.cfg.liveStream())
		if err != nil {
			return fmt.Errorf("opening %s: %w", i.cfg.liveStream(), err)
		}
		info, err := live.Info(actx)
		if err != nil {
			return fmt.Errorf("reading %s: %w", i.cfg.liveStream(), err)
		}
		h0 := info.State.LastSeq
		gapRev, err := lastGap(actx, live, i.cfg.gapSubject())
		if err != nil {
			return err
		}
		t0 := time.Now()
		snap, err := i.readState(ctx)
		if err != nil {
			return err
		}
		i.live, i.liveBorn, i.gapRev = live, info.Created, gapRev
		i.update(func() []change[T] { return i.store.reconcile(snap) })
		i.bumpRev(snap.maxRev)
		i.log.Debug("informer loaded the state", "objects", i.store.len(), "revision", snap.maxRev, "historySeq", h0, "took", time.Since(t0))
		return i.followFrom(ctx, h0)
	})
}

// followFrom opens the live consumer where a state read that began at the
// live stream's sequence h0 leaves off. The publisher writes the state of
// an event just after its history message, so the state may lack h0's
// event: an informer that may read by sequence applies h0's message when
// it is ours and follows from h0+1; a narrowed one (which may not, and
// whose resource's last message may already be a later one) follows from
// h0 itself, which its filtered consumer delivers when it is ours. Events
// the state already holds are skipped by revision.
func (i *Informer[T]) followFrom(ctx context.Context, h0 uint64) error {
	actx, cancel := apiCtx(ctx)
	defer cancel()
	from := h0
	if i.cfg.narrow() {
		from = max(h0, 1) - 1
	} else if err := i.applyLast(actx, h0); err != nil {
		return err
	}
	i.applied, i.baseline, i.recreate = from, from, true
	if err := i.open(actx); err != nil {
		return err
	}
	if i.cons.CachedInfo().NumPending == 0 {
		i.markSynced()
		return nil
	}
	info, err := i.live.Info(actx)
	if err != nil {
		return fmt.Errorf("reading %s: %w", i.cfg.liveStream(), err)
	}
	i.syncTarget = info.State.LastSeq
	return nil
}

// applyLast applies the live stream's message h0 when it is ours: the
// publisher writes the state of an event just after its history message,
// so the state read may have missed that one event.
func (i *Informer[T]) applyLast(ctx context.Context, h0 uint64) error {
	if h0 == 0 {
		return nil
	}
	msg, err := i.live.GetMsg(ctx, h0)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading message %d of %s: %w", h0, i.cfg.liveStream(), err)
	}
	if msg.Sequence != h0 || !i.ours(msg.Subject) {
		return nil
	}
	ev, obj, haveObj, err := i.decode(msg.Data)
	if err == nil {
		i.applyEvent(ev, obj, haveObj)
	}
	return nil
}

// lastGap returns the revision of the last gap announced on live's gap
// subject.
func lastGap(ctx context.Context, live jetstream.Stream, subject string) (int64, error) {
	msg, err := live.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the last gap event: %w", err)
	}
	return bus.HeaderInt(msg.Header, bus.HeaderRevision), nil
}

// resync rebuilds the cache from the state stream, telling the handlers
// what changed. seeded, when not 0, is a revision the state stream was
// rewritten from etcd at: a cached object the state lacks that is not
// newer than it is gone, even without a tombstone (a lost state stream
// is rewritten without any).
func (i *Informer[T]) resync(ctx context.Context, reason string, seeded int64) error {
	i.count.inc(outResync)
	t0 := time.Now()
	var snap *snapshot[T]
	var last uint64
	err := i.retry(ctx, "resyncing from the state stream", func() error {
		actx, cancel := apiCtx(ctx)
		defer cancel()
		info, err := i.live.Info(actx)
		if err != nil {
			return fmt.Errorf("reading %s: %w", i.cfg.liveStream(), err)
		}
		last = info.State.LastSeq
		snap, err = i.readState(ctx)
		return err
	})
	if err != nil {
		return err
	}
	snap.maxRev = max(snap.maxRev, seeded)
	var changes []change[T]
	i.update(func() []change[T] { changes = i.store.reconcile(snap); return changes })
	i.bumpRev(snap.maxRev)
	i.baseline = max(i.baseline, last)
	i.log.Info("informer resynced from the state stream", "reason", reason, "changes", len(changes),
		"objects", i.store.len(), "revision", i.Revision(), "took", time.Since(t0))
	return nil
}

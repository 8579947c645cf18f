package informer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebus/kubebus/bus"
)

const (
	fetchBatch = 256 // messages per pull request
	ackEvery   = 64  // ack (AckAll) at least this often within a batch
)

// errLostDelivery: the consumer delivered a message this informer never
// received (a delivery sequence was skipped); it must be recreated.
var errLostDelivery = errors.New("informer: a delivery was lost")

// open looks up the durable consumer or, when it is gone or must restart,
// recreates it at the message after the last one applied.
func (i *Informer[T]) open(ctx context.Context) error {
	ctx, cancel := apiCtx(ctx)
	defer cancel()
	if !i.recreate {
		c, err := i.live.Consumer(ctx, i.durable)
		switch {
		case err == nil:
			if created := c.CachedInfo().Created; !created.Equal(i.created) {
				return fmt.Errorf("%w: %s was recreated at %s", ErrDurableConflict, i.durable, created.Format(time.RFC3339Nano))
			}
			i.cons = c
			return nil
		case !errors.Is(err, jetstream.ErrConsumerNotFound):
			return fmt.Errorf("opening consumer %s: %w", i.durable, err)
		}
		// A stream that was lost and created again took the durable
		// with it; its sequences start again.
		if err := i.checkReset(ctx); err != nil {
			return err
		}
		i.log.Warn("the durable consumer is gone; recreating it", "from", i.applied+1)
	}
	if err := i.live.DeleteConsumer(ctx, i.durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("deleting consumer %s: %w", i.durable, err)
	}
	cc := jetstream.ConsumerConfig{
		Durable:           i.durable,
		Description:       "kubebus informer",
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       i.applied + 1,
		AckPolicy:         jetstream.AckAllPolicy,
		AckWait:           30 * time.Second,
		MaxDeliver:        -1,
		FilterSubjects:    i.cfg.liveFilters(),
		InactiveThreshold: time.Hour,
		// The informer knows its own position (the last stream sequence it
		// applied) and recreates the durable there when NATS lost it, so
		// the server need not write the consumer's state to disk after
		// every delivery and ack: with a hundred nodes' consumers that was
		// a tenth of the control plane's CPU.
		MemoryStorage: true,
	}
	if len(cc.FilterSubjects) == 1 {
		// One filter goes in the create request's subject, where the bus's
		// permissions check it (a node may read only its own pods).
		cc.FilterSubject, cc.FilterSubjects = cc.FilterSubjects[0], nil
	}
	c, err := i.live.CreateConsumer(ctx, cc)
	if err != nil {
		return fmt.Errorf("creating consumer %s: %w", i.durable, err)
	}
	i.cons, i.created, i.dseq, i.recreate = c, c.CachedInfo().Created, 0, false
	return nil
}

// follow reads the live stream until ctx ends.
func (i *Informer[T]) follow(ctx context.Context) error {
	wait := min(max(i.cfg.CheckInterval, 100*time.Millisecond), 5*time.Second)
	var b backoff
	var lastCheck time.Time
	failures := 0
	fail := func(what string, err error) {
		failures++
		i.log.Debug("bus call failed", "what", what, "err", err, "attempt", failures)
		if failures == 3 || failures%50 == 0 {
			i.log.Warn("bus unavailable; retrying", "what", what, "err", err, "attempt", failures)
		}
		b.wait(ctx)
	}
	for ctx.Err() == nil {
		if i.cons == nil {
			if err := i.open(ctx); err != nil {
				if errors.Is(err, ErrDurableConflict) {
					return err
				}
				fail("opening the live consumer", err)
				continue
			}
			i.count.inc(outReopen)
			i.log.Debug("live consumer reopened", "applied", i.applied)
		}
		if i.checkNow || i.healNow || time.Since(lastCheck) >= i.cfg.CheckInterval {
			i.checkNow = false
			if err := i.check(ctx); err != nil {
				if errors.Is(err, ErrDurableConflict) {
					return err
				}
				i.checkNow = true
				fail("checking the stream", err)
				continue
			}
			lastCheck = time.Now()
			if i.cons == nil {
				continue
			}
		}
		err := i.fetch(ctx, wait)
		i.m.observe(i.Revision(), i.store.len())
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, errLostDelivery):
			i.log.Debug("a delivery was lost; recreating the consumer", "from", i.applied+1)
			i.cons, i.recreate = nil, true
		case err != nil:
			i.cons = nil
			fail("reading the live stream", err)
		default:
			failures = 0
			b.reset()
		}
	}
	return nil
}

// fetch pulls one batch and handles its messages as they arrive.
func (i *Informer[T]) fetch(ctx context.Context, wait time.Duration) error {
	batch, err := i.cons.Fetch(fetchBatch, jetstream.FetchMaxWait(wait))
	if err != nil {
		return err
	}
	var last jetstream.Msg
	unacked := 0
	ack := func() {
		if last != nil && unacked > 0 {
			_ = last.Ack() // AckAll: everything up to it; a lost ack means a redelivery we skip
			unacked = 0
		}
	}
	defer ack()
	msgs := batch.Messages()
	for {
		select {
		case <-ctx.Done():
			return nil
		case msg, ok := <-msgs:
			if !ok {
				return batch.Error()
			}
			if err := i.handle(ctx, msg); err != nil {
				return err
			}
			last = msg
			if unacked++; unacked >= ackEvery {
				ack()
			}
		}
	}
}

// handle checks a delivery's sequences and processes it once.
func (i *Informer[T]) handle(ctx context.Context, msg jetstream.Msg) error {
	md, err := msg.Metadata()
	if err != nil {
		i.count.inc(outMalformed)
		return nil
	}
	if md.Sequence.Consumer > i.dseq+1 {
		return errLostDelivery
	}
	i.dseq = md.Sequence.Consumer
	if seq := md.Sequence.Stream; seq <= i.applied {
		i.count.inc(outRedelivered)
	} else {
		i.applied = seq
		if err := i.process(ctx, msg.Subject(), msg.Headers(), msg.Data()); err != nil {
			return err
		}
	}
	if !i.synced.Load() && (md.NumPending == 0 || md.Sequence.Stream >= i.syncTarget) {
		i.markSynced()
	}
	return nil
}

// process checks a live message's place in its chain and applies it.
func (i *Informer[T]) process(ctx context.Context, subject string, h nats.Header, data []byte) error {
	if subject == bus.GapSubject {
		ev, err := bus.Decode(data)
		if err != nil || ev.Type != bus.Gap {
			i.count.inc(outMalformed)
			i.log.Warn("skipping a malformed gap event", "err", err)
			return nil
		}
		if ev.Revision <= i.gapRev {
			return nil // healed already
		}
		i.gapRev = ev.Revision
		return i.heal(ctx, "gap-event", ev.Revision, "from", ev.From, "to", ev.To)
	}
	rev := bus.HeaderInt(h, bus.HeaderRevision)
	if rev <= 0 {
		i.count.inc(outMalformed)
		i.log.Warn("skipping a message without a revision", "subject", subject)
		return nil
	}
	expected := i.chain.last
	if prev := bus.HeaderInt(h, bus.HeaderChainPrev); !i.chain.next(prev, rev) {
		i.count.gap("chain")
		i.log.Warn("missed events: the chain is broken; resyncing", "subject", subject, "revision", rev,
			"chainPrev", prev, "expected", expected)
		if err := i.resync(ctx, "chain", 0); err != nil {
			return err
		}
	}
	ev, obj, haveObj, err := i.decode(data)
	switch {
	case errors.Is(err, errNotOurs):
		return nil
	case err == nil && ev.Revision != rev:
		err = fmt.Errorf("event revision %d under header revision %d", ev.Revision, rev)
	}
	if err != nil {
		i.count.inc(outMalformed)
		i.log.Warn("skipping a malformed event", "subject", subject, "revision", rev, "err", err)
		return nil
	}
	i.applyEvent(ev, obj, haveObj)
	return nil
}

// applyEvent applies one event to the cache and tells the handlers.
func (i *Informer[T]) applyEvent(ev *bus.Event, obj T, haveObj bool) {
	i.update(func() []change[T] {
		c, ok := i.store.apply(objKey{ev.Namespace, ev.Name}, ev.Type, obj, haveObj, ev.Revision)
		// Revision never runs ahead of what List returns (the proxy
		// records it as what its rules reflect).
		i.bumpRev(ev.Revision)
		if !ok {
			i.count.inc(outStale)
			i.log.Debug("stale event skipped", "type", ev.Type, "namespace", ev.Namespace, "name", ev.Name, "revision", ev.Revision)
			return nil
		}
		i.count.inc(outApplied)
		i.log.Debug("event applied", "type", ev.Type, "namespace", ev.Namespace, "name", ev.Name, "revision", ev.Revision)
		return []change[T]{c}
	})
}

// heal counts a gap and rebuilds the cache from the state stream; the
// chain restarts with the next event. seeded is the revision the
// publisher rewrote the state stream at (a GAP's), 0 when unknown.
func (i *Informer[T]) heal(ctx context.Context, reason string, seeded int64, attrs ...any) error {
	i.count.gap(reason)
	i.log.Warn("missed events; resyncing", append([]any{"reason", reason}, attrs...)...)
	if err := i.resync(ctx, reason, seeded); err != nil {
		return err
	}
	i.chain.restart()
	return nil
}

// check asks whether the durable is still this informer's, whether unread
// messages were evicted by the stream's limits, and whether the publisher
// announced a gap this informer has not healed from (a node informer's
// consumer does not carry gaps, so it learns of them only here).
func (i *Informer[T]) check(ctx context.Context) error {
	actx, cancel := apiCtx(ctx)
	defer cancel()
	ci, err := i.cons.Info(actx)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
		i.cons = nil // reopen recreates it, after checking the stream
		return nil
	case err != nil:
		return fmt.Errorf("reading consumer %s: %w", i.durable, err)
	case !ci.Created.Equal(i.created):
		return fmt.Errorf("%w: %s was recreated at %s", ErrDurableConflict, i.durable, ci.Created.Format(time.RFC3339Nano))
	}
	i.m.setPending(ci.NumPending)
	if !i.synced.Load() && ci.NumPending == 0 && ci.Delivered.Stream <= i.applied {
		i.markSynced() // what was pending at start is read (or was evicted, and healed below)
	}
	info, err := i.live.Info(actx)
	if err != nil {
		return fmt.Errorf("reading %s: %w", i.cfg.liveStream(), err)
	}
	if i.isReset(info) {
		i.reset(info) // the gap check below rebuilds the cache
	}
	if i.healNow {
		// A gap announced before the state is read is healed by this
		// read too.
		gapRev, err := lastGap(actx, i.live, i.cfg.gapSubject())
		if err != nil {
			return err
		}
		if err := i.heal(ctx, "stream-reset", 0, "stream", i.cfg.liveStream()); err != nil {
			return err
		}
		i.healNow, i.gapRev = false, max(i.gapRev, gapRev)
	}
	if first := info.State.FirstSeq; first > max(i.applied, i.baseline)+1 {
		evicted, err := i.lostToEviction(actx)
		if err != nil {
			return err
		}
		if evicted {
			if err := i.heal(ctx, "evicted", 0, "firstSeq", first, "applied", i.applied); err != nil {
				return err
			}
		}
		i.baseline = max(i.baseline, first-1)
	}
	gapRev, err := lastGap(actx, i.live, i.cfg.gapSubject())
	if err != nil {
		return err
	}
	if gapRev > i.gapRev {
		i.gapRev = gapRev
		return i.heal(ctx, "gap-event", gapRev, "revision", gapRev)
	}
	return nil
}

// isReset reports whether the live stream is not the one the informer's
// position refers to: it was created again (its store or the stream was
// lost), or it ends before what the informer applied.
func (i *Informer[T]) isReset(info *jetstream.StreamInfo) bool {
	return !info.Created.Equal(i.liveBorn) || info.State.LastSeq < i.applied
}

// checkReset reads the live stream and resets the informer when the
// stream is new.
func (i *Informer[T]) checkReset(ctx context.Context) error {
	info, err := i.live.Info(ctx)
	if err != nil {
		return fmt.Errorf("reading %s: %w", i.cfg.liveStream(), err)
	}
	if i.isReset(info) {
		i.reset(info)
	}
	return nil
}

// reset follows a live stream that was created again, or lost its
// messages, from its start, and has the informer check the stream at
// once. The publisher that finds a stream lost announces a GAP on it
// (after rewriting KUBE_STATE from etcd, unless KUBE_NODEPODS alone was
// lost): the check rebuilds the cache from the state stream as soon as
// the GAP is there, without waiting for the new stream's sequences to
// reach the old ones. (A publisher that republishes etcd's history
// instead sends the events again, and those the cache holds are skipped
// by revision.) A node informer also rebuilds at once, GAP or not:
// KUBE_NODEPODS is kept in memory and may come back empty from a NATS
// restart, and its own state stream holds every pod of the node.
func (i *Informer[T]) reset(info *jetstream.StreamInfo) {
	i.count.gap("stream-reset")
	i.log.Warn("the live stream was lost or created again; following the new one from its start",
		"stream", i.cfg.liveStream(), "created", info.Created, "lastSeq", info.State.LastSeq, "applied", i.applied)
	i.liveBorn = info.Created
	// Any gap on the new stream is news, whatever the old one carried.
	i.applied, i.baseline, i.dseq, i.recreate, i.cons, i.gapRev = 0, 0, 0, true, nil, 0
	i.chain.restart()
	i.checkNow = true
	i.healNow = i.cfg.Node != ""
}

// lostToEviction decides whether messages evicted before this informer
// read them may have been on its chain. When the chain is followed and
// the chain's newest message is still stored, nothing is lost for good:
// either it was applied, or the chain check will flag the hole when it
// arrives.
func (i *Informer[T]) lostToEviction(ctx context.Context) (bool, error) {
	if !i.chain.known {
		return true, nil
	}
	_, err := i.live.GetLastMsgForSubject(ctx, i.cfg.liveFilter())
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return true, nil
	default:
		return false, fmt.Errorf("reading the last message of %s: %w", i.cfg.liveFilter(), err)
	}
}

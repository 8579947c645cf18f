package publish

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// window bounds the changes sent and not yet confirmed. Sending the next
// revisions while the acks of the previous ones travel keeps the bus from
// being paced by one round trip to JetStream per revision.
const window = 256

// pending is one change sent to the bus and not yet confirmed.
type pending struct {
	rev   int64
	start time.Time
	// hist is nil when the history stream already holds the revision.
	hist     *nats.Msg
	histAck  jetstream.PubAckFuture
	histSeq  uint64 // the sequence hist must be stored at
	node     *nodeSend
	state    *nats.Msg
	stateAck jetstream.PubAckFuture
}

// resyncError: a message of the change at rev was not stored; everything
// before rev was. The publisher reloads its cursor and sends again from
// rev.
type resyncError struct {
	rev int64
	err error
}

func (e *resyncError) Error() string {
	return fmt.Sprintf("publish: revision %d not stored: %v", e.rev, e.err)
}

func (e *resyncError) Unwrap() error { return e.err }

// pump publishes the changes until the channel closes or a change is not
// stored. It confirms the oldest change once window of them are in
// flight, and every change whenever the source has nothing more ready.
// While it waits for changes it checks now and then that the streams are
// still there.
func (p *Publisher) pump(ctx context.Context, changes <-chan Change) error {
	check := time.NewTicker(streamCheckEvery)
	defer check.Stop()
	for {
		var ch Change
		var ok bool
		select {
		case ch, ok = <-changes:
		default:
			if err := p.settleAll(ctx); err != nil {
				return err
			}
			select {
			case ch, ok = <-changes:
			case <-check.C:
				if err := p.checkStreams(ctx); errors.Is(err, errStreamsReset) {
					return err
				}
				continue
			}
		}
		if !ok {
			return p.settleAll(ctx)
		}
		if ch.Progress {
			if err := p.settleAll(ctx); err != nil {
				return err
			}
			if err := p.progress(ctx, ch.Revision); err != nil {
				return err
			}
			p.health.done(ch.Revision)
			continue
		}
		pd, err := p.send(ctx, ch)
		if err != nil {
			return err
		}
		if pd == nil {
			if len(p.inflight) == 0 {
				p.health.done(ch.Revision)
			}
			continue
		}
		p.inflight = append(p.inflight, pd)
		if len(p.inflight) >= window {
			if err := p.settle(ctx, p.inflight[0]); err != nil {
				return err
			}
			p.inflight = p.inflight[1:]
		}
	}
}

// settleAll confirms every change in flight, oldest first.
func (p *Publisher) settleAll(ctx context.Context) error {
	for len(p.inflight) > 0 {
		if err := p.settle(ctx, p.inflight[0]); err != nil {
			return err
		}
		p.inflight = p.inflight[1:]
	}
	return nil
}

// settle waits for the acks of the oldest change in flight. A history
// message refused for its sequence while everything before it is stored
// means another publisher writes: that ends the leadership as before. Any
// other failure is a resyncError.
func (p *Publisher) settle(ctx context.Context, pd *pending) error {
	fail := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &resyncError{rev: pd.rev, err: err}
	}
	if pd.hist != nil {
		ack, err := awaitAck(ctx, pd.histAck)
		if err != nil {
			var apiErr *jetstream.APIError
			if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence && pd.histSeq == p.lastSeq+1 {
				return p.checkFence(ctx, pd.rev)
			}
			return fail(err)
		}
		if ack.Duplicate || ack.Sequence != pd.histSeq {
			return fail(fmt.Errorf("stored at sequence %d (duplicate %t), not %d", ack.Sequence, ack.Duplicate, pd.histSeq))
		}
		p.lastSeq, p.lastRev = ack.Sequence, pd.rev
	}
	if pd.node != nil {
		for _, it := range pd.node.items {
			if it.msg != nil {
				if _, err := awaitAck(ctx, it.msgF); err != nil {
					return fail(err)
				}
			}
			if _, err := awaitAck(ctx, it.stateF); err != nil {
				return fail(err)
			}
		}
	}
	if _, err := awaitAck(ctx, pd.stateAck); err != nil {
		return fail(err)
	}
	p.m.published.Inc()
	p.m.lastRevision.Set(float64(pd.rev))
	p.health.done(pd.rev)
	p.health.ok()
	p.resyncWait = 0
	p.m.latency.Observe(time.Since(pd.start).Seconds())
	return nil
}

// resync drops what is in flight and reloads the cursor from the streams;
// the next round of lead sends again from the revision that failed (or
// from the cursor when rs.rev is 0), its state messages under a new
// epoch. Resyncs in a row back off (from 50ms to 2s): a full store
// refuses every message until it has room.
func (p *Publisher) resync(ctx context.Context, rs *resyncError) error {
	p.health.fail("publishing revision "+strconv.FormatInt(rs.rev, 10), rs.err)
	p.log.Debug("a bus message was not stored; sending again", "revision", rs.rev, "err", rs.err)
	p.resyncWait = min(max(2*p.resyncWait, 50*time.Millisecond), 2*time.Second)
	sleep(ctx, p.resyncWait)
	p.inflight = nil
	p.epoch++
	floor, nodeFloor := p.floor, p.nodeFloor
	if err := p.retry(ctx, "reading the stream cursor", func() error { return p.loadCursor(ctx) }); err != nil {
		return err
	}
	p.floor, p.nodeFloor = floor, nodeFloor
	p.resumeFrom = rs.rev
	return nil
}

// errNoFuture stands for an asynchronous publish that could not be sent.
var errNoFuture = errors.New("publish: the message could not be sent")

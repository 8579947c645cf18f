package tap

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kubebus/kubebus/bus"
)

// The tap keeps the last state of at most maxRemembered objects, and of
// at most maxRememberedBytes in all, to diff their next update without
// asking the stream; past either it forgets them all and asks again.
const (
	maxRemembered      = 20000
	maxRememberedBytes = 64 << 20
)

// fetchTimeout bounds one request for an object's previous message, and
// missRetry is how long the tap waits before asking once more when the
// answer is not the previous state (a stream replica may lag behind the
// message the tap just read).
const (
	fetchTimeout = 2 * time.Second
	missRetry    = 200 * time.Millisecond
)

// lastBeforeFunc returns the Object of the last message on subject with
// a sequence up to seq, and that message's revision; a nil object when
// there is none.
type lastBeforeFunc func(ctx context.Context, subject string, seq uint64) (json.RawMessage, int64, error)

// previousStates fills in the previous state of MODIFIED events, which the
// publisher does not send: from the last state the tap read of the
// object, else from the object's previous message on the stream.
type previousStates struct {
	last       map[bus.ObjectKey]remembered
	bytes      int
	lastBefore lastBeforeFunc // nil once a request failed
	// complete says the tap read the subjects it follows from the
	// stream's first message and forgot nothing: an object it holds no
	// state of then has no earlier message on the stream.
	complete bool
	// retried says a miss was asked again once already and was a real
	// miss: later misses are not asked again.
	retried bool
}

type remembered struct {
	rev int64
	obj json.RawMessage
}

func newPreviousStates(lastBefore lastBeforeFunc) *previousStates {
	return &previousStates{last: map[bus.ObjectKey]remembered{}, lastBefore: lastBefore}
}

// fill sets ev.Previous when ev is an update without it; seq is ev's
// sequence on the stream. When the previous message is not on the stream
// (aged out, or never published) ev.Previous stays empty. After a request
// fails (a timeout, a refusal), the tap asks no more, so that a broken
// connection does not stall it on every update; the error says so.
func (p *previousStates) fill(ctx context.Context, ev *bus.Event, seq uint64) error {
	if ev.Type != bus.Modified || len(ev.Previous) > 0 || ev.PreviousRevision <= 0 {
		return nil
	}
	k := ev.Key()
	if r, ok := p.last[k]; ok && r.rev == ev.PreviousRevision {
		ev.Previous = r.obj
		return nil
	}
	if seq <= 1 || p.lastBefore == nil || p.complete {
		return nil
	}
	for attempt := 0; attempt < 2; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(missRetry):
			case <-ctx.Done():
				return nil
			}
		}
		fctx, cancel := context.WithTimeout(ctx, fetchTimeout)
		obj, rev, err := p.lastBefore(fctx, bus.HistorySubject(k), seq-1)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			p.lastBefore = nil
			return fmt.Errorf("reading the state of %s %s before revision %d, so updates are shown without their changes from now on: %w",
				k.GroupResource(), ObjectName(k.Namespace, k.Name), ev.Revision, err)
		}
		if obj != nil && rev == ev.PreviousRevision {
			ev.Previous = obj
			return nil
		}
		if rev > ev.PreviousRevision || p.retried {
			return nil // a later message, or misses are real: it is gone
		}
		if attempt > 0 {
			p.retried = true
		}
	}
	return nil
}

// remember records ev's object as the object's last state.
func (p *previousStates) remember(ev *bus.Event) {
	k := ev.Key()
	if r, ok := p.last[k]; ok {
		p.bytes -= len(r.obj)
		delete(p.last, k)
	}
	if ev.Type != bus.Added && ev.Type != bus.Modified {
		return
	}
	if len(p.last) >= maxRemembered || p.bytes+len(ev.Object) > maxRememberedBytes {
		clear(p.last)
		p.bytes, p.complete = 0, false
	}
	p.last[k] = remembered{rev: ev.Revision, obj: ev.Object}
	p.bytes += len(ev.Object)
}

// directLastBefore asks stream, with a JetStream direct get, for the last
// message on a subject up to a sequence.
func directLastBefore(nc *nats.Conn, stream string) lastBeforeFunc {
	return func(ctx context.Context, subject string, seq uint64) (json.RawMessage, int64, error) {
		req, err := json.Marshal(struct {
			MultiLast []string `json:"multi_last"`
			UpToSeq   uint64   `json:"up_to_seq"`
		}{[]string{subject}, seq})
		if err != nil {
			return nil, 0, err
		}
		inbox := nc.NewInbox()
		sub, err := nc.SubscribeSync(inbox)
		if err != nil {
			return nil, 0, err
		}
		defer func() { _ = sub.Unsubscribe() }()
		if err := nc.PublishRequest("$JS.API.DIRECT.GET."+stream, inbox, req); err != nil {
			return nil, 0, err
		}
		var found *nats.Msg
		for done := false; !done; {
			m, err := sub.NextMsgWithContext(ctx)
			if err != nil {
				return nil, 0, err
			}
			switch status := m.Header.Get("Status"); status {
			case "":
				found = m
			case "204": // the end of the batch
				done = true
			case "404": // no message
				return nil, 0, nil
			default:
				return nil, 0, fmt.Errorf("direct get: %s %s", status, m.Header.Get("Description"))
			}
		}
		if found == nil {
			return nil, 0, nil
		}
		ev, err := decodeEvent(found.Data)
		if err != nil {
			return nil, 0, err
		}
		return ev.Object, ev.Revision, nil
	}
}

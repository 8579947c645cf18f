package tap

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kubebus/kubebus/bus"
)

// maxRemembered bounds how many objects' last states the tap keeps to
// diff their next update without asking the stream.
const maxRemembered = 20000

// fetchTimeout bounds one request for an object's previous message.
const fetchTimeout = 5 * time.Second

// lastBeforeFunc returns the Object of the last message on subject with
// a sequence up to seq, and that message's revision; a nil object when
// there is none.
type lastBeforeFunc func(ctx context.Context, subject string, seq uint64) (json.RawMessage, int64, error)

// previousStates fills in the previous state of MODIFIED events, which the
// publisher does not send: from the last state the tap read of the
// object, else from the object's previous message on the stream.
type previousStates struct {
	last       map[bus.ObjectKey]remembered
	lastBefore lastBeforeFunc
}

type remembered struct {
	rev int64
	obj json.RawMessage
}

func newPreviousStates(lastBefore lastBeforeFunc) *previousStates {
	return &previousStates{last: map[bus.ObjectKey]remembered{}, lastBefore: lastBefore}
}

// fill sets ev.Previous when ev is an update without it; seq is ev's
// sequence on the stream. When the previous message is gone (aged out of
// the stream) ev.Previous stays empty.
func (p *previousStates) fill(ctx context.Context, ev *bus.Event, seq uint64) error {
	if ev.Type != bus.Modified || len(ev.Previous) > 0 || ev.PreviousRevision <= 0 {
		return nil
	}
	k := ev.Key()
	if r, ok := p.last[k]; ok && r.rev == ev.PreviousRevision {
		ev.Previous = r.obj
		return nil
	}
	if seq <= 1 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	obj, rev, err := p.lastBefore(ctx, bus.HistorySubject(k), seq-1)
	if err != nil {
		return fmt.Errorf("reading the state of %s before revision %d: %w", k.GroupResource()+" "+ObjectName(k.Namespace, k.Name), ev.Revision, err)
	}
	if obj != nil && rev == ev.PreviousRevision {
		ev.Previous = obj
	}
	return nil
}

// remember records ev's object as the object's last state.
func (p *previousStates) remember(ev *bus.Event) {
	k := ev.Key()
	switch ev.Type {
	case bus.Added, bus.Modified:
		if _, ok := p.last[k]; !ok && len(p.last) >= maxRemembered {
			for old := range p.last { // forget one, any
				delete(p.last, old)
				break
			}
		}
		p.last[k] = remembered{rev: ev.Revision, obj: ev.Object}
	case bus.Deleted:
		delete(p.last, k)
	}
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
		ev, err := bus.Decode(found.Data)
		if err != nil {
			return nil, 0, err
		}
		return ev.Object, ev.Revision, nil
	}
}

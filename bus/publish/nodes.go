package publish

import (
	"context"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebus/kubebus/bus"
)

// nodeSend is a pod event's messages to the nodes it concerns, sent
// asynchronously and not yet settled.
type nodeSend struct {
	rev   int64
	items []nodeItem
}

type nodeItem struct {
	filter       string
	msg, state   *nats.Msg
	id           string
	tombstone    bool
	msgF, stateF jetstream.PubAckFuture
}

// sendNode routes a pod event to the nodes it concerns: the node it is
// bound to now and, when that changed or the pod is gone, the node it was
// bound to before (which then sees it DELETED). It sends the messages and
// returns them to settle. data is ev's body.
func (p *Publisher) sendNode(ctx context.Context, k bus.ObjectKey, ch Change, ev *bus.Event, data []byte) (*nodeSend, error) {
	cur, prev := podNode(ch.Value), podNode(ch.Prev)
	if ch.Delete {
		cur, prev = "", podNode(ch.Prev)
	}
	type route struct {
		node string
		ev   *bus.Event
		data []byte
	}
	var routes []route
	if cur != "" {
		e, d := ev, data
		if prev != cur && ev.Type == bus.Modified {
			// Newly bound: for this node the pod is ADDED.
			c := *ev
			c.Type, c.PreviousRevision = bus.Added, 0
			e = &c
			d, _ = bus.EncodeLean(e)
		}
		routes = append(routes, route{cur, e, d})
	}
	if prev != "" && prev != cur {
		if ch.Delete {
			routes = append(routes, route{prev, ev, data}) // ev is the DELETED event already
		} else {
			// The old node's last view of the pod. Nothing has checked
			// this value yet, so it is encoded with the check, and a
			// value that is neither JSON nor protobuf leaves only the
			// pod's name.
			c := *ev
			c.Type = bus.Deleted
			c.SetStored(ch.Prev)
			d, err := bus.Encode(&c)
			if err != nil {
				c.Object, c.ObjectProto = skeleton(k), nil
				d, _ = bus.EncodeLean(&c)
			}
			routes = append(routes, route{prev, &c, d})
		}
	}
	ns := &nodeSend{rev: ch.Revision}
	for _, r := range routes {
		it := nodeItem{filter: bus.NodeFilter(r.node), tombstone: r.ev.Type == bus.Deleted}
		chain, err := p.chainPrev(ctx, bus.NodePodsStream, it.filter)
		if err != nil {
			return nil, err
		}
		if ch.Revision > chain {
			it.msg = eventMsg(bus.NodeSubject(r.node, k.Namespace, k.Name), r.ev, r.data, chain)
			it.id = "r" + strconv.FormatInt(ch.Revision, 10) + "/" + r.node
			// No retry by the client when the stream does not answer:
			// a retry would store the message late, after the stream
			// was lost and recreated and the node GAP sent (nodeGap);
			// the publisher sends again from the failed change itself.
			it.msgF = p.sendAsync(it.msg, jetstream.WithMsgID(it.id), jetstream.WithRetryAttempts(0))
			p.chains[it.filter] = ch.Revision
		}
		it.state = eventMsg(bus.StateNodeSubject(r.node, k.Namespace, k.Name), r.ev, r.data, 0)
		it.stateF = p.sendAsync(it.state, p.stateOpts(it.state, ch.Revision, it.tombstone)...)
		ns.items = append(ns.items, it)
	}
	return ns, nil
}

// publishPlain publishes with a message ID for deduplication.
func (p *Publisher) publishPlain(ctx context.Context, msg *nats.Msg, id string, first jetstream.PubAckFuture) error {
	return p.retry(ctx, "publishing "+id, func() error {
		if first != nil {
			_, err := awaitAck(ctx, first)
			first = nil
			return err
		}
		actx, cancel := context.WithTimeout(ctx, publishTimeout)
		defer cancel()
		_, err := p.js.PublishMsg(actx, msg, jetstream.WithMsgID(id))
		return err
	})
}

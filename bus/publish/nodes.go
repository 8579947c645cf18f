package publish

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebus/kubebus/bus"
)

// podNode reads spec.nodeName from a stored pod.
func podNode(data []byte) string {
	if len(data) == 0 {
		return ""
	}
	var p struct {
		Spec struct {
			NodeName string `json:"nodeName"`
		} `json:"spec"`
	}
	_ = json.Unmarshal(data, &p)
	return p.Spec.NodeName
}

// publishNode routes a pod event to the nodes it concerns: the node it is
// bound to now and, when that changed or the pod is gone, the node it was
// bound to before (which then sees it DELETED).
func (p *Publisher) publishNode(ctx context.Context, k bus.ObjectKey, ch Change, ev *bus.Event, data []byte) error {
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
			c.Type, c.Previous, c.PreviousRevision = bus.Added, nil, 0
			e = &c
			d, _ = json.Marshal(e)
		}
		routes = append(routes, route{cur, e, d})
	}
	if prev != "" && prev != cur {
		c := *ev
		c.Type = bus.Deleted
		if !ch.Delete {
			c.Object, c.Previous = ch.Prev, nil
		}
		d, _ := json.Marshal(&c)
		routes = append(routes, route{prev, &c, d})
	}
	for _, r := range routes {
		filter := bus.NodeFilter(r.node)
		chain, err := p.chainPrev(ctx, bus.NodePodsStream, filter)
		if err != nil {
			return err
		}
		if ch.Revision > chain {
			msg := eventMsg(bus.NodeSubject(r.node, k.Namespace, k.Name), r.ev, r.data, chain)
			id := "r" + strconv.FormatInt(ch.Revision, 10) + "/" + r.node
			if err := p.publishPlain(ctx, msg, id); err != nil {
				return err
			}
			p.chains[filter] = ch.Revision
		}
		sm := eventMsg(bus.StateNodeSubject(r.node, k.Namespace, k.Name), r.ev, r.data, 0)
		if err := p.publishState(ctx, sm, ch.Revision, r.ev.Type == bus.Deleted); err != nil {
			return err
		}
	}
	return nil
}

// publishPlain publishes with a message ID for deduplication.
func (p *Publisher) publishPlain(ctx context.Context, msg *nats.Msg, id string) error {
	return retry(ctx, p.log, "publishing "+id, func() error {
		actx, cancel := context.WithTimeout(ctx, publishTimeout)
		defer cancel()
		_, err := p.js.PublishMsg(actx, msg, jetstream.WithMsgID(id))
		return err
	})
}

package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/internal/storedobj"
)

// reseed handles revisions the bus lost or never received (etcd compacted
// them before they were published, or a stream was lost): it rewrites
// KUBE_STATE from a fresh etcd read (every object, and a tombstone for
// every object the state stream knows that no longer exists), then
// publishes a GAP event on KUBE_HISTORY and KUBE_NODEPODS naming the
// range, and resumes after the read's revision. The GAP is the marker that
// tells consumers to rebuild from KUBE_STATE.
func (p *Publisher) reseed(ctx context.Context, reason string) error {
	rev, kvs, err := p.cfg.Source.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("reseeding: reading etcd: %w", err)
	}
	p.m.gaps.Inc()
	p.log.Error("reseeding the state stream from etcd", "reason", reason, "from", p.lastRev+1, "to", rev)
	live := map[string]bool{}
	for _, kv := range kvs {
		k, ok := objectKey(kv.Key)
		if !ok || !storedobj.Valid(kv.Value) {
			continue
		}
		ev := bus.Event{Type: bus.Modified, Revision: kv.Revision, Group: k.Group, Resource: k.Resource, Namespace: k.Namespace, Name: k.Name}
		ev.SetStored(kv.Value)
		data, _ := bus.Encode(&ev)
		subj := bus.StateSubject(k)
		live[subj] = true
		if err := p.publishState(ctx, eventMsg(subj, &ev, data, 0), rev, false, nil); err != nil {
			return err
		}
		if node := podNode(kv.Value); node != "" && k.Group == "" && k.Resource == "pods" {
			ns := bus.StateNodeSubject(node, k.Namespace, k.Name)
			live[ns] = true
			if err := p.publishState(ctx, eventMsg(ns, &ev, data, 0), rev, false, nil); err != nil {
				return err
			}
		}
	}
	if err := p.tombstoneMissing(ctx, live, rev); err != nil {
		return err
	}
	gap := bus.Event{Type: bus.Gap, Revision: rev, PrevRevision: p.lastRev, From: p.lastRev + 1, To: rev}
	data, _ := json.Marshal(&gap)
	if err := p.publishHistory(ctx, eventMsg(bus.GapSubject, &gap, data, 0), rev, "/gap", nil); err != nil {
		return err
	}
	if err := p.publishPlain(ctx, eventMsg(bus.NodeGapSubject, &gap, data, 0), "r"+strconv.FormatInt(rev, 10)+"/nodegap", nil); err != nil {
		return err
	}
	// Every chain restarts after the gap.
	p.chains, p.floor = map[string]int64{}, rev
	return nil
}

// nodeGap handles a KUBE_NODEPODS that lost what it held while
// KUBE_HISTORY and KUBE_STATE did not: it publishes a GAP on
// KUBE_NODEPODS alone, which sends every kubelet back to KUBE_STATE, and
// restarts the node chains after it.
//
// The GAP is at the revision before the publisher's resume point: the
// first revision not wholly stored when the loss was found (failedRev),
// or else the cursor, whose KUBE_STATE messages may not have been stored
// when a publisher stopped. The publisher sends again from that point,
// so those revisions' node events go on the new stream after the GAP. A
// GAP already there at that revision or later (another publisher's,
// after the same loss) is not repeated.
func (p *Publisher) nodeGap(ctx context.Context, reason string) error {
	from := p.lastRev
	if p.failedRev > 0 && p.failedRev < from {
		from, p.resumeFrom = p.failedRev, p.failedRev
	}
	rev := from - 1
	for filter := range p.chains {
		if bus.IsNodeFilter(filter) {
			delete(p.chains, filter)
		}
	}
	if rev < 1 {
		return nil // nothing was published before the resume point
	}
	var last int64
	if err := p.retry(ctx, "reading the last node gap", func() error {
		st, err := p.js.Stream(ctx, bus.NodePodsStream)
		if err != nil {
			return err
		}
		msg, err := st.GetLastMsgForSubject(ctx, bus.NodeGapSubject)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			last = 0
		case err != nil:
			return err
		default:
			last = bus.HeaderInt(msg.Header, bus.HeaderRevision)
		}
		return nil
	}); err != nil {
		return err
	}
	if last < rev {
		p.m.gaps.Inc()
		p.log.Warn("announcing a gap to the kubelets", "reason", reason, "revision", rev)
		gap := bus.Event{Type: bus.Gap, Revision: rev, PrevRevision: p.lastRev, From: 1, To: rev}
		data, _ := json.Marshal(&gap)
		if err := p.publishPlain(ctx, eventMsg(bus.NodeGapSubject, &gap, data, 0), "r"+strconv.FormatInt(rev, 10)+"/nodegap", nil); err != nil {
			return err
		}
	}
	p.nodeFloor = max(rev, last)
	return nil
}

// tombstoneMissing writes a DELETED tombstone for every state subject whose
// object is gone.
func (p *Publisher) tombstoneMissing(ctx context.Context, live map[string]bool, rev int64) error {
	st, err := p.js.Stream(ctx, bus.StateStream)
	if err != nil {
		return err
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(">"))
	if err != nil {
		return fmt.Errorf("listing state subjects: %w", err)
	}
	for subj := range info.State.Subjects {
		if live[subj] {
			continue
		}
		msg, err := st.GetLastMsgForSubject(ctx, subj)
		if err != nil {
			continue
		}
		ev, err := bus.Decode(msg.Data)
		if err != nil || ev.Type == bus.Deleted {
			continue
		}
		ev.Type, ev.Revision, ev.Previous = bus.Deleted, rev, nil
		data, _ := bus.Encode(ev)
		m := eventMsg(subj, ev, data, 0)
		m.Header.Set(bus.HeaderRevision, strconv.FormatInt(rev, 10))
		if err := p.publishState(ctx, m, rev, true, nil); err != nil {
			return err
		}
	}
	return nil
}

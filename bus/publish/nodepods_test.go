package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebus/kubebus/bus"
)

func TestLostStreams(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	all := func(nodes time.Time) map[string]time.Time {
		return map[string]time.Time{bus.HistoryStream: t0, bus.StateStream: t0, bus.NodePodsStream: nodes}
	}
	later := t0.Add(time.Hour)
	for _, c := range []struct {
		name        string
		before, now map[string]time.Time
		nodeLastSeq uint64
		lastRev     int64
		want        []string
	}{
		{"first open, node stream holds messages", nil, all(t0), 40, 10, nil},
		{"first open, node stream never held one, history has revisions", nil, all(later), 0, 10, []string{bus.NodePodsStream}},
		{"first open, both empty", nil, all(later), 0, 0, nil},
		{"reopen, nothing changed", all(t0), all(t0), 40, 10, nil},
		{"reopen, node stream recreated", all(t0), all(later), 0, 10, []string{bus.NodePodsStream}},
		{"reopen, every stream recreated", all(t0), map[string]time.Time{bus.HistoryStream: later, bus.StateStream: later, bus.NodePodsStream: later}, 0, 10,
			[]string{bus.HistoryStream, bus.NodePodsStream, bus.StateStream}},
		{"reopen, state recreated", all(t0), map[string]time.Time{bus.HistoryStream: t0, bus.StateStream: later, bus.NodePodsStream: t0}, 40, 10, []string{bus.StateStream}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := lostStreams(c.before, c.now, c.nodeLastSeq, c.lastRev)
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Fatalf("lostStreams = %v, want %v", got, c.want)
			}
		})
	}
}

// nodeMsg is a message of KUBE_NODEPODS as a kubelet reads it.
type nodeMsg struct {
	subject   string
	rev, prev int64
	typ       string
}

// nodeMsgs reads KUBE_NODEPODS from its start.
func nodeMsgs(ctx context.Context, t *testing.T, js jetstream.JetStream) []nodeMsg {
	t.Helper()
	st, err := js.Stream(ctx, bus.NodePodsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []nodeMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, nodeMsg{m.Subject, bus.HeaderInt(m.Header, bus.HeaderRevision), bus.HeaderInt(m.Header, bus.HeaderChainPrev), m.Header.Get(bus.HeaderType)})
	}
	return out
}

func podOn(name, node, phase string) string {
	return fmt.Sprintf(`{"metadata":{"name":%q,"namespace":"ns"},"spec":{"nodeName":%q},"status":{"phase":%q}}`, name, node, phase)
}

// waitNodeRev waits until KUBE_NODEPODS's last message for subject is at
// rev, and returns its event.
func waitNodeRev(t *testing.T, js jetstream.JetStream, subject string, rev int64) *bus.Event {
	t.Helper()
	var ev *bus.Event
	poll(t, 30*time.Second, fmt.Sprintf("%s at revision %d", subject, rev), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, err := js.Stream(ctx, bus.NodePodsStream)
		if err != nil {
			return false
		}
		m, err := st.GetLastMsgForSubject(ctx, subject)
		if err != nil {
			return false
		}
		if ev, err = bus.Decode(m.Data); err != nil {
			t.Fatalf("%s: %v", subject, err)
		}
		return ev.Revision == rev
	})
	return ev
}

// checkNodeRefill checks a KUBE_NODEPODS that was filled again after it
// was lost alone at a resume point: a GAP at the revision before it, then
// the pod's events from it on, the first linked to the GAP; and no GAP on
// KUBE_HISTORY, whose readers had nothing to rebuild.
func checkNodeRefill(ctx context.Context, t *testing.T, js jetstream.JetStream, resume int64, want []int64) {
	t.Helper()
	got := nodeMsgs(ctx, t, js)
	if len(got) != 1+len(want) || got[0].subject != bus.NodeGapSubject || got[0].rev != resume-1 || got[0].typ != string(bus.Gap) {
		t.Fatalf("KUBE_NODEPODS holds %+v; want a GAP at %d, then revisions %v", got, resume-1, want)
	}
	prev := resume - 1
	for i, rev := range want {
		m := got[i+1]
		if m.subject != bus.NodeSubject("n1", "ns", "p") || m.rev != rev || m.prev != prev {
			t.Fatalf("message %d of KUBE_NODEPODS is %+v; want %s at %d after %d (all: %+v)", i+1, m, bus.NodeSubject("n1", "ns", "p"), rev, prev, got)
		}
		prev = rev
	}
	if rev := lastHistoryRevision(ctx, js, bus.GapSubject); rev != 0 {
		t.Errorf("a GAP at %d on KUBE_HISTORY; losing KUBE_NODEPODS alone concerns the kubelets only", rev)
	}
}

// TestPublisherRefillsLostNodePods: KUBE_NODEPODS is lost on its own
// (it is kept in memory), once under a running publisher and once while
// no publisher runs, as when the all-in-one restarts with its NATS. Each
// time the publisher announces a GAP on KUBE_NODEPODS alone and sends the
// node events again from its resume point, so that a kubelet that rebuilds
// from KUBE_STATE at the GAP misses nothing.
func TestPublisherRefillsLostNodePods(t *testing.T) {
	_, js := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src := newFakeSource()
	src.put("/registry/core/configmaps/ns/c", `{"metadata":{"name":"c","namespace":"ns"}}`)
	src.put("/registry/core/pods/ns/p", podOn("p", "n1", "Pending"))
	r3 := src.put("/registry/core/pods/ns/p", podOn("p", "n1", "Running"))
	stop := runPublisher(t, src, alwaysLeader{}, js)
	waitNodeRev(t, js, bus.NodeSubject("n1", "ns", "p"), r3)

	// Under a running, idle publisher.
	if err := js.DeleteStream(ctx, bus.NodePodsStream); err != nil {
		t.Fatal(err)
	}
	waitNodeRev(t, js, bus.NodeSubject("n1", "ns", "p"), r3)
	r4 := src.put("/registry/core/pods/ns/p", podOn("p", "n1", "Succeeded"))
	waitNodeRev(t, js, bus.NodeSubject("n1", "ns", "p"), r4)
	checkNodeRefill(ctx, t, js, r3, []int64{r3, r4})

	// While no publisher runs: the next one finds the stream empty while
	// the history holds revisions.
	stop()
	if err := js.DeleteStream(ctx, bus.NodePodsStream); err != nil {
		t.Fatal(err)
	}
	if err := bus.EnsureStreams(ctx, js, bus.StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	stop = runPublisher(t, src, alwaysLeader{}, js)
	waitNodeRev(t, js, bus.NodeSubject("n1", "ns", "p"), r4)
	r5 := src.put("/registry/core/pods/ns/p", podOn("p", "n1", "Failed"))
	waitNodeRev(t, js, bus.NodeSubject("n1", "ns", "p"), r5)
	checkNodeRefill(ctx, t, js, r4, []int64{r4, r5})

	// A publisher that starts again with nothing lost announces nothing.
	stop()
	stop = runPublisher(t, src, alwaysLeader{}, js)
	defer stop()
	r6 := src.put("/registry/core/pods/ns/p", podOn("p", "n1", "Unknown"))
	waitNodeRev(t, js, bus.NodeSubject("n1", "ns", "p"), r6)
	checkNodeRefill(ctx, t, js, r4, []int64{r4, r5, r6})
}

// TestEnsureStreamsMovesNodePods: the all-in-one's limits keep
// KUBE_NODEPODS in memory, and a stream on disk, as kubebus created it
// before, is replaced by one in memory; other limits move it back to
// disk. The other streams keep what they hold.
func TestEnsureStreamsMovesNodePods(t *testing.T) {
	_, js := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := bus.EnsureStreams(ctx, js, bus.StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "kube.core.configmaps.ns.c", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	check := func(l bus.StreamLimits, storage jetstream.StorageType, bytes int64) {
		t.Helper()
		if err := bus.EnsureStreams(ctx, js, l); err != nil {
			t.Fatalf("EnsureStreams(%+v): %v", l, err)
		}
		st, err := js.Stream(ctx, bus.NodePodsStream)
		if err != nil {
			t.Fatal(err)
		}
		if cfg := st.CachedInfo().Config; cfg.Storage != storage || cfg.MaxBytes != bytes {
			t.Fatalf("KUBE_NODEPODS with %+v: storage %s, %d bytes; want %s, %d", l, cfg.Storage, cfg.MaxBytes, storage, bytes)
		}
		hist, err := js.Stream(ctx, bus.HistoryStream)
		if err != nil {
			t.Fatal(err)
		}
		if n := hist.CachedInfo().State.Msgs; n != 1 {
			t.Fatalf("KUBE_HISTORY holds %d messages, want the 1 published", n)
		}
	}
	check(bus.StreamLimits{}, jetstream.FileStorage, 1<<30)
	check(bus.StreamLimits{NodePodsInMemory: true}, jetstream.MemoryStorage, bus.DefaultNodeMaxBytes)
	check(bus.StreamLimits{NodePodsInMemory: true, NodeMaxBytes: 32 << 20}, jetstream.MemoryStorage, 32<<20)
	check(bus.StreamLimits{}, jetstream.FileStorage, 1<<30)
}

// dropNodesJS deletes KUBE_NODEPODS when the publisher sends the node
// message of revision at, as a NATS that lost the stream would, with the
// changes around it in flight.
type dropNodesJS struct {
	jetstream.JetStream
	t    *testing.T
	at   int64
	once sync.Once
}

func (d *dropNodesJS) PublishMsgAsync(msg *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	if bus.IsNodeFilter(msg.Subject) && msg.Header.Get(bus.HeaderRevision) == strconv.FormatInt(d.at, 10) {
		d.once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := d.JetStream.DeleteStream(ctx, bus.NodePodsStream); err != nil {
				d.t.Errorf("deleting %s: %v", bus.NodePodsStream, err)
			}
		})
	}
	return d.JetStream.PublishMsgAsync(msg, opts...)
}

// TestPublisherRefillsNodePodsLostInFlight: KUBE_NODEPODS is lost with a
// hundred pod changes in flight. The new stream starts with a GAP at a
// revision before the loss; after it, each node's chain links up from
// the GAP and holds every change of its pods after it, so a kubelet that
// rebuilds from KUBE_STATE at the GAP misses nothing; and KUBE_STATE ends
// at every pod's last revision (state messages sent again are not
// deduplicated against older ones).
func TestPublisherRefillsNodePodsLostInFlight(t *testing.T) {
	_, js := startNATS(t)
	src := newFakeSource()
	const puts, pods, lostAt = 100, 10, 40
	node := func(p int) string { return []string{"n1", "n2"}[p%2] }
	byNode := map[string][]int64{} // each node's revisions, in order
	last := map[int]int64{}        // each pod's last revision
	for i := range puts {
		p := i % pods
		rev := src.put(fmt.Sprintf("/registry/core/pods/ns/p%d", p), podOn(fmt.Sprintf("p%d", p), node(p), fmt.Sprint("phase-", i)))
		byNode[node(p)] = append(byNode[node(p)], rev)
		last[p] = rev
	}
	stop := runPublisher(t, batchSource{Source: src, n: puts}, alwaysLeader{}, &dropNodesJS{JetStream: js, t: t, at: lostAt})
	defer stop()
	for p := range pods {
		waitNodeRev(t, js, bus.NodeSubject(node(p), "ns", fmt.Sprintf("p%d", p)), last[p])
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := nodeMsgs(ctx, t, js)
	if len(got) == 0 || got[0].subject != bus.NodeGapSubject || got[0].rev >= lostAt {
		t.Fatalf("KUBE_NODEPODS starts with %+v; want a GAP before revision %d", got[:min(len(got), 1)], lostAt)
	}
	gap := got[0].rev
	for _, n := range []string{"n1", "n2"} {
		var want, have []int64
		for _, rev := range byNode[n] {
			if rev > gap {
				want = append(want, rev)
			}
		}
		prev := gap
		for _, m := range got[1:] {
			if !strings.HasPrefix(m.subject, "knode."+n+".") {
				continue
			}
			if m.prev != prev {
				t.Errorf("node %s: revision %d links to %d, want %d", n, m.rev, m.prev, prev)
			}
			have, prev = append(have, m.rev), m.rev
		}
		if !slices.Equal(have, want) {
			t.Errorf("node %s after the GAP at %d: revisions %v, want %v", n, gap, have, want)
		}
	}
	if rev := lastHistoryRevision(ctx, js, bus.GapSubject); rev != 0 {
		t.Errorf("a GAP at %d on KUBE_HISTORY", rev)
	}
	st, err := js.Stream(ctx, bus.StateStream)
	if err != nil {
		t.Fatal(err)
	}
	for p := range pods {
		k := bus.ObjectKey{Resource: "pods", Namespace: "ns", Name: fmt.Sprintf("p%d", p)}
		for _, subj := range []string{bus.StateSubject(k), bus.StateNodeSubject(node(p), "ns", k.Name)} {
			m, err := st.GetLastMsgForSubject(ctx, subj)
			if err != nil {
				t.Fatalf("%s: %v", subj, err)
			}
			if rev := bus.HeaderInt(m.Header, bus.HeaderRevision); rev != last[p] {
				t.Errorf("%s is at revision %d, want %d", subj, rev, last[p])
			}
		}
	}
}

package informer

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/bus"
)

// twoInformers is a publisher over n pods spread over node-1 and node-2,
// an informer on KUBE_HISTORY and one on node-1's KUBE_NODEPODS, both
// holding every pod they follow.
type twoInformers struct {
	js           jetstream.JetStream
	etcd         *fakeEtcd
	stopPub      func()
	inf, node    *Informer[*corev1.Pod]
	rec, nodeRec *recorder
	onNode1      func() map[string]string
}

func startTwoInformers(t *testing.T, ctx context.Context, n int) *twoInformers {
	t.Helper()
	b := &twoInformers{js: startNATS(t).connect(ctx), etcd: newFakeEtcd(), rec: newRecorder(), nodeRec: newRecorder()}
	for i := range n {
		b.etcd.put(podKey("a", fmt.Sprintf("p%02d", i)), mustJSON(t, pod("a", fmt.Sprintf("p%02d", i), []string{"node-1", "node-2"}[i%2], nil)))
	}
	b.stopPub = runPublisher(t, ctx, b.js, b.etcd)
	b.inf = newPodInformer(t, b.js, Config[*corev1.Pod]{Component: "history"})
	b.node = newPodInformer(t, b.js, Config[*corev1.Pod]{Component: "kubelet", Node: "node-1"})
	b.inf.AddHandler(b.rec)
	b.node.AddHandler(b.nodeRec)
	runInformer(t, ctx, b.inf)
	runInformer(t, ctx, b.node)
	b.onNode1 = func() map[string]string { return b.etcd.podsOn("node-1") }
	converges(t, b.inf, b.rec, b.etcd.pods)
	converges(t, b.node, b.nodeRec, b.onNode1)
	return b
}

// TestIntegrationStreamsLostUnderRunningInformers: every stream is deleted
// while the publisher and informers run (one on KUBE_HISTORY, one on a
// node's KUBE_NODEPODS), and etcd changes meanwhile. The publisher
// recreates and reseeds the streams; the informers notice, rebuild from
// the state stream and follow the new streams.
func TestIntegrationStreamsLostUnderRunningInformers(t *testing.T) {
	skipShort(t)
	ctx := testContext(t)
	b := startTwoInformers(t, ctx, 20)
	js, etcd, inf, node, rec, nodeRec, onNode1 := b.js, b.etcd, b.inf, b.node, b.rec, b.nodeRec, b.onNode1

	deleteStreams(t, ctx, js)
	etcd.del(podKey("a", "p00"))
	etcd.del(podKey("a", "p01"))
	etcd.put(podKey("a", "p02"), mustJSON(t, pod("a", "p02", "node-1", map[string]string{"changed": "yes"})))
	converges(t, inf, rec, etcd.pods)
	converges(t, node, nodeRec, onNode1)
	if inf.Stats().Resyncs == 0 || node.Stats().Resyncs == 0 {
		t.Errorf("the informers did not rebuild from the state stream: %+v, %+v", inf.Stats(), node.Stats())
	}

	// New changes flow.
	etcd.put(podKey("a", "new"), mustJSON(t, pod("a", "new", "node-1", nil)))
	etcd.del(podKey("a", "p04"))
	converges(t, inf, rec, etcd.pods)
	converges(t, node, nodeRec, onNode1)
}

// TestIntegrationNodePodsLostAlone: KUBE_NODEPODS, which is kept in
// memory, is lost on its own, once under a running publisher and once
// while none runs (the all-in-one restarting with its NATS), and a node's
// pods change meanwhile. The node informer rebuilds from the state stream
// at the publisher's GAP and follows the new stream; the informer on
// KUBE_HISTORY, which lost nothing, does not rebuild.
func TestIntegrationNodePodsLostAlone(t *testing.T) {
	skipShort(t)
	ctx := testContext(t)
	b := startTwoInformers(t, ctx, 10)
	js, etcd, inf, node, rec, nodeRec, onNode1 := b.js, b.etcd, b.inf, b.node, b.rec, b.nodeRec, b.onNode1

	if err := js.DeleteStream(ctx, bus.NodePodsStream); err != nil {
		t.Fatal(err)
	}
	etcd.del(podKey("a", "p00"))
	etcd.put(podKey("a", "p02"), mustJSON(t, pod("a", "p02", "node-1", map[string]string{"changed": "once"})))
	converges(t, inf, rec, etcd.pods)
	converges(t, node, nodeRec, onNode1)
	resyncs := node.Stats().Resyncs

	b.stopPub()
	if err := js.DeleteStream(ctx, bus.NodePodsStream); err != nil {
		t.Fatal(err)
	}
	etcd.del(podKey("a", "p04"))
	etcd.put(podKey("a", "p06"), mustJSON(t, pod("a", "p06", "node-1", map[string]string{"changed": "twice"})))
	etcd.put(podKey("a", "moved"), mustJSON(t, pod("a", "moved", "node-1", nil)))
	runPublisher(t, ctx, js, etcd)
	converges(t, inf, rec, etcd.pods)
	converges(t, node, nodeRec, onNode1)
	if got := node.Stats().Resyncs; resyncs == 0 || got <= resyncs {
		t.Errorf("the node informer rebuilt from the state stream %d times after the first loss and %d after the second; want once more each time", resyncs, got)
	}
	if got := inf.Stats().Resyncs; got != 0 {
		t.Errorf("the history informer rebuilt %d times; KUBE_HISTORY lost nothing", got)
	}

	// New changes flow.
	etcd.put(podKey("a", "new"), mustJSON(t, pod("a", "new", "node-1", nil)))
	etcd.del(podKey("a", "p08"))
	converges(t, inf, rec, etcd.pods)
	converges(t, node, nodeRec, onNode1)
}

// TestIntegrationStreamRecreatedWithLowerSequences: the informer applied
// hundreds of messages; the streams come back (from a new publisher, after
// etcd compacted what was never published) holding a handful. The informer
// rebuilds from the state stream at once instead of waiting for the new
// stream's sequences to reach the old ones.
func TestIntegrationStreamRecreatedWithLowerSequences(t *testing.T) {
	skipShort(t)
	ctx := testContext(t)
	n := startNATS(t)
	js := n.connect(ctx)
	etcd := newFakeEtcd()
	for i := range 300 {
		etcd.put(podKey("a", fmt.Sprintf("p%02d", i%30)), mustJSON(t, pod("a", fmt.Sprintf("p%02d", i%30), "", map[string]string{"i": fmt.Sprint(i)})))
	}
	stopPub := runPublisher(t, ctx, js, etcd)
	inf := newPodInformer(t, js, Config[*corev1.Pod]{Component: "lower"})
	rec := newRecorder()
	inf.AddHandler(rec)
	runInformer(t, ctx, inf)
	converges(t, inf, rec, etcd.pods)

	stopPub()
	deleteStreams(t, ctx, js)
	for i := range 5 {
		etcd.del(podKey("a", fmt.Sprintf("p%02d", i)))
	}
	etcd.put(podKey("a", "fresh"), mustJSON(t, pod("a", "fresh", "", nil)))
	etcd.compact()
	runPublisher(t, ctx, js, etcd) // a new process: it finds empty streams and reseeds
	converges(t, inf, rec, etcd.pods)
	st, err := js.Stream(ctx, bus.HistoryStream)
	if err != nil {
		t.Fatal(err)
	}
	if last := st.CachedInfo().State.LastSeq; last >= 300 {
		t.Fatalf("the new history holds %d messages; the test needs fewer than the informer applied", last)
	}
	etcd.put(podKey("a", "after"), mustJSON(t, pod("a", "after", "", nil)))
	converges(t, inf, rec, etcd.pods)
}

// TestIntegrationHandlerPanicIsContained: a handler that panics is
// counted and logged, and it and the other handlers get the next events.
func TestIntegrationHandlerPanicIsContained(t *testing.T) {
	skipShort(t)
	ctx := testContext(t)
	n := startNATS(t)
	js := n.connect(ctx)
	etcd := newFakeEtcd()
	runPublisher(t, ctx, js, etcd)
	reg := prometheus.NewRegistry()
	inf := newPodInformer(t, js, Config[*corev1.Pod]{Component: "panicky", Metrics: reg})
	var after atomic.Int64
	inf.AddHandler(HandlerFuncs[*corev1.Pod]{AddFunc: func(p *corev1.Pod) {
		if p.Name == "bomb" {
			var slots []int
			slots[len(p.Name)]++ // an index out of range: a real bug, not a chosen panic value
		}
		if strings.HasPrefix(p.Name, "after") {
			after.Add(1)
		}
	}})
	rec := newRecorder()
	inf.AddHandler(rec)
	runInformer(t, ctx, inf)
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	etcd.put(podKey("a", "bomb"), mustJSON(t, pod("a", "bomb", "", nil)))
	for i := range 3 {
		etcd.put(podKey("a", fmt.Sprint("after-", i)), mustJSON(t, pod("a", fmt.Sprint("after-", i), "", nil)))
	}
	converges(t, inf, rec, etcd.pods)
	if got := after.Load(); got != 3 {
		t.Fatalf("the panicking handler saw %d later events, want 3", got)
	}
	if got := inf.Stats().HandlerPanics; got != 1 {
		t.Fatalf("HandlerPanics = %d, want 1", got)
	}
	c, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range c {
		if mf.GetName() == "kubebus_informer_handler_panics_total" {
			found = true
			if v := mf.GetMetric()[0].GetCounter().GetValue(); v != 1 {
				t.Fatalf("kubebus_informer_handler_panics_total = %v, want 1", v)
			}
		}
	}
	if !found {
		t.Fatal("kubebus_informer_handler_panics_total is not registered")
	}
}

// deleteStreams deletes every kubebus stream, as an operator's mistake or
// a lost JetStream store would.
func deleteStreams(t *testing.T, ctx context.Context, js jetstream.JetStream) {
	t.Helper()
	for _, name := range bus.StreamNames {
		if err := js.DeleteStream(ctx, name); err != nil {
			t.Fatalf("deleting %s: %v", name, err)
		}
	}
}

package informer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubebus/kubebus/bus"
)

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: embedded NATS")
	}
}

// converges waits until the informer's cache, and the view its handler
// built from the events it was told, both equal want.
func converges(t *testing.T, inf *Informer[*corev1.Pod], rec *recorder, want func() map[string]string) {
	t.Helper()
	var cache, view map[string]string
	deadline := time.Now().Add(30 * time.Second)
	for {
		w := want()
		cache, view = cacheView(inf), nil
		if rec != nil {
			view, _ = rec.snapshot()
		}
		if maps.Equal(cache, w) && (rec == nil || maps.Equal(view, w)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cache did not converge:\n cache %v\n view  %v\n want  %v\n stats %+v", cache, view, w, inf.Stats())
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
	if rec != nil {
		if _, problems := rec.snapshot(); len(problems) > 0 {
			t.Fatalf("handler saw events that do not fit: %v", problems)
		}
	}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, key(p))
	}
	slices.Sort(out)
	return out
}

func TestIntegrationSnapshotAndLive(t *testing.T) {
	skipShort(t)
	ctx := testContext(t)
	n := startNATS(t)
	js := n.connect(ctx)
	etcd := newFakeEtcd()
	for i := range 30 {
		ns := []string{"a", "b"}[i%2]
		node := []string{"node-1", "node-2", ""}[i%3]
		etcd.put(podKey(ns, fmt.Sprintf("p%02d", i)), mustJSON(t, pod(ns, fmt.Sprintf("p%02d", i), node, map[string]string{"app": fmt.Sprint("app", i%5), "tier": "web"})))
	}
	etcd.put("/registry/core/configmaps/a/cm", []byte(`{"metadata":{"name":"cm","namespace":"a"}}`)) // another resource
	runPublisher(t, ctx, js, etcd)

	inf := newPodInformer(t, js, Config[*corev1.Pod]{Component: "snap"})
	nsInf := newPodInformer(t, js, Config[*corev1.Pod]{Component: "snap", Namespace: "b"})
	rec := newRecorder()
	inf.AddHandler(rec)
	if inf.HasSynced() {
		t.Fatal("HasSynced before Run")
	}
	// The publisher may still be publishing: the informer must end up
	// with every object whether it gets it from the state or the history.
	runInformer(t, ctx, inf)
	runInformer(t, ctx, nsInf)
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if !inf.HasSynced() {
		t.Fatal("HasSynced is false after WaitForSync")
	}
	converges(t, inf, rec, etcd.pods)
	if got := inf.Revision(); got < etcd.revision()-1 {
		t.Errorf("Revision() = %d, etcd is at %d", got, etcd.revision())
	}

	// Live changes.
	for i := 30; i < 40; i++ {
		etcd.put(podKey("a", fmt.Sprintf("p%02d", i)), mustJSON(t, pod("a", fmt.Sprintf("p%02d", i), "node-1", nil)))
	}
	p := pod("a", "p00", "node-1", map[string]string{"app": "changed"})
	p.Status.Phase = corev1.PodRunning
	etcd.put(podKey("a", "p00"), mustJSON(t, p))
	etcd.del(podKey("b", "p01"))
	etcd.del(podKey("a", "p30"))
	converges(t, inf, rec, etcd.pods)

	got, ok := inf.Get("a", "p00")
	if !ok || got.Status.Phase != corev1.PodRunning || got.Labels["app"] != "changed" {
		t.Fatalf("Get(a, p00) = %v, %v", got, ok)
	}
	if _, ok := inf.Get("b", "p01"); ok {
		t.Fatal("Get(b, p01) found a deleted pod")
	}
	wantNS := func() map[string]string {
		out := map[string]string{}
		for k, v := range etcd.pods() {
			if k[:2] == "b/" {
				out[k] = v
			}
		}
		return out
	}
	converges(t, nsInf, nil, wantNS)

	// Indexes.
	if got, want := len(inf.ListNamespace("b")), len(wantNS()); got != want {
		t.Errorf("ListNamespace(b) has %d pods, want %d", got, want)
	}
	tests := []struct {
		name string
		got  []*corev1.Pod
		want func(*corev1.Pod) bool
	}{
		{"ByIndex node-2", inf.ByIndex("spec.nodeName", "node-2"), func(p *corev1.Pod) bool { return p.Spec.NodeName == "node-2" }},
		{"ByIndex unbound", inf.ByIndex("spec.nodeName", ""), func(p *corev1.Pod) bool { return p.Spec.NodeName == "" }},
		{"ByLabels app=app3", inf.ByLabels(labels.SelectorFromSet(labels.Set{"app": "app3"})), func(p *corev1.Pod) bool { return p.Labels["app"] == "app3" }},
		{"ByLabels app in (app1,changed),tier", inf.ByLabels(mustSelector(t, "app in (app1,changed),tier")),
			func(p *corev1.Pod) bool {
				return (p.Labels["app"] == "app1" || p.Labels["app"] == "changed") && p.Labels["tier"] != ""
			}},
		{"ByLabels !tier", inf.ByLabels(mustSelector(t, "!tier")), func(p *corev1.Pod) bool { return p.Labels["tier"] == "" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var want []*corev1.Pod
			for _, p := range inf.List() {
				if tc.want(p) {
					want = append(want, p)
				}
			}
			if len(want) == 0 {
				t.Fatal("the case selects nothing")
			}
			if !slices.Equal(names(tc.got), names(want)) {
				t.Errorf("got %v, want %v", names(tc.got), names(want))
			}
		})
	}
	if s := inf.Stats(); s.Gaps != 0 || s.Resyncs != 0 || s.Malformed != 0 {
		t.Errorf("stats %+v: want no gaps, resyncs or malformed messages", s)
	}
}

func mustSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func TestIntegrationRestartRebuildsCache(t *testing.T) {
	skipShort(t)
	ctx := testContext(t)
	n := startNATS(t)
	js := n.connect(ctx)
	etcd := newFakeEtcd()
	for i := range 50 {
		etcd.put(podKey("a", fmt.Sprint("p", i)), mustJSON(t, pod("a", fmt.Sprint("p", i), "", nil)))
	}
	runPublisher(t, ctx, js, etcd)

	first := newPodInformer(t, js, Config[*corev1.Pod]{Component: "sched"})
	stop := runInformer(t, ctx, first)
	converges(t, first, nil, etcd.pods)
	for i := range 20 {
		etcd.put(podKey("a", fmt.Sprint("p", i)), mustJSON(t, pod("a", fmt.Sprint("p", i), "node-1", nil)))
	}
	converges(t, first, nil, etcd.pods)
	stop()

	// While no informer runs, the history moves on.
	for i := 20; i < 30; i++ {
		etcd.del(podKey("a", fmt.Sprint("p", i)))
	}
	waitPublished(t, ctx, js, etcd.put(podKey("b", "new"), mustJSON(t, pod("b", "new", "", nil))))

	second := newPodInformer(t, js, Config[*corev1.Pod]{Component: "sched"})
	rec := newRecorder()
	second.AddHandler(rec)
	runInformer(t, ctx, second)
	if err := second.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	converges(t, second, rec, etcd.pods)
	rec.mu.Lock()
	deletes := rec.deletes
	rec.mu.Unlock()
	if deletes != 0 {
		t.Errorf("a new cache had %d deletes; it should only add", deletes)
	}
	for _, p := range first.List() {
		if q, ok := second.Get(p.Namespace, p.Name); ok && q.ResourceVersion == p.ResourceVersion && q.Spec.NodeName != p.Spec.NodeName {
			t.Errorf("%s at %s differs between the caches", key(p), p.ResourceVersion)
		}
	}
	if s := second.Stats(); s.Gaps != 0 || s.Resyncs != 0 {
		t.Errorf("stats %+v: want no gaps", s)
	}
}

func TestIntegrationChainMismatchResyncs(t *testing.T) {
	skipShort(t)
	ctx := testContext(t)
	n := startNATS(t)
	js := n.connect(ctx)
	w := newBusWriter(t, js)
	pods := map[string]*corev1.Pod{}
	for i := range 10 {
		p := pod("a", fmt.Sprint("p", i), "", nil)
		pods[p.Name] = p
		w.put(ctx, p)
	}
	inf := newPodInformer(t, js, Config[*corev1.Pod]{Component: "chain"})
	rec := newRecorder()
	inf.AddHandler(rec)
	runInformer(t, ctx, inf)
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	w.put(ctx, pod("a", "live", "", nil)) // the chain is now known
	eventually(t, 10*time.Second, "the live event", func() bool { _, ok := inf.Get("a", "live"); return ok })

	// The cache diverges: three events it never sees.
	added := pod("a", "lost-add", "", nil)
	w.put(ctx, added, lose)
	changed := pods["p1"].DeepCopy()
	changed.Spec.NodeName = "node-9"
	w.put(ctx, changed, lose)
	w.del(ctx, pods["p2"], lose)
	if _, ok := inf.Get("a", "lost-add"); ok {
		t.Fatal("the cache saw a lost event")
	}
	// The next event's Kube-Chain-Prev names the last lost one.
	w.put(ctx, pod("a", "after", "", nil))

	want := func() map[string]string {
		out := map[string]string{}
		for _, name := range []string{"p0", "p1", "p3", "p4", "p5", "p6", "p7", "p8", "p9", "live", "lost-add", "after"} {
			p, ok := inf.Get("a", name)
			if !ok {
				return nil
			}
			out["a/"+name] = p.ResourceVersion
		}
		return out
	}
	eventually(t, 10*time.Second, "the resync", func() bool { return want() != nil && len(inf.List()) == 12 })
	converges(t, inf, rec, want)
	if p, _ := inf.Get("a", "p1"); p.Spec.NodeName != "node-9" {
		t.Errorf("p1 is on %q after the resync, want node-9", p.Spec.NodeName)
	}
	if s := inf.Stats(); s.Gaps != 1 || s.Resyncs != 1 {
		t.Errorf("stats %+v: want 1 gap and 1 resync", s)
	}
}

func TestIntegrationGapEventResyncs(t *testing.T) {
	skipShort(t)
	ctx := testContext(t)
	n := startNATS(t)
	js := n.connect(ctx)
	etcd := newFakeEtcd()
	for i := range 20 {
		etcd.put(podKey("a", fmt.Sprint("p", i)), mustJSON(t, pod("a", fmt.Sprint("p", i), []string{"node-1", "node-2"}[i%2], nil)))
	}
	stopPublisher := runPublisher(t, ctx, js, etcd)

	inf := newPodInformer(t, js, Config[*corev1.Pod]{Component: "gap"})
	rec := newRecorder()
	inf.AddHandler(rec)
	nodeInf := newPodInformer(t, js, Config[*corev1.Pod]{Component: "kubelet", Node: "node-1"})
	nodeRec := newRecorder()
	nodeInf.AddHandler(nodeRec)
	runInformer(t, ctx, inf)
	runInformer(t, ctx, nodeInf)
	converges(t, inf, rec, etcd.pods)
	onNode := func(node string) func() map[string]string {
		return func() map[string]string { return etcd.podsOn(node) }
	}
	converges(t, nodeInf, nodeRec, onNode("node-1"))

	// The publisher is away while etcd changes and compacts: it will
	// reseed the state stream and announce a gap.
	stopPublisher()
	for i := range 6 {
		etcd.del(podKey("a", fmt.Sprint("p", i)))
	}
	etcd.put(podKey("a", "p10"), mustJSON(t, pod("a", "p10", "node-1", map[string]string{"moved": "yes"})))
	etcd.put(podKey("a", "new"), mustJSON(t, pod("a", "new", "node-1", nil)))
	etcd.compact()
	runPublisher(t, ctx, js, etcd)

	converges(t, inf, rec, etcd.pods)
	converges(t, nodeInf, nodeRec, onNode("node-1"))
	if s := inf.Stats(); s.Gaps < 1 || s.Resyncs < 1 {
		t.Errorf("informer stats %+v: want a gap and a resync", s)
	}
	if s := nodeInf.Stats(); s.Gaps < 1 || s.Resyncs < 1 {
		t.Errorf("node informer stats %+v: want a gap and a resync", s)
	}

	// And it follows the live stream after the gap.
	etcd.put(podKey("a", "later"), mustJSON(t, pod("a", "later", "node-1", nil)))
	converges(t, inf, rec, etcd.pods)
	converges(t, nodeInf, nodeRec, onNode("node-1"))
}

func TestIntegrationMalformedSkipped(t *testing.T) {
	skipShort(t)
	ctx := testContext(t)
	n := startNATS(t)
	js := n.connect(ctx)
	w := newBusWriter(t, js)
	w.put(ctx, pod("a", "good", "", nil))
	// A malformed message in the state stream: skipped by the snapshot.
	w.raw(ctx, bus.StateSubject(bus.ObjectKey{Resource: "pods", Namespace: "a", Name: "junk"}), []byte("{not json"), nil)

	inf := newPodInformer(t, js, Config[*corev1.Pod]{Component: "malformed"})
	rec := newRecorder()
	inf.AddHandler(rec)
	runInformer(t, ctx, inf)
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	w.put(ctx, pod("a", "live", "", nil))
	eventually(t, 10*time.Second, "the live event", func() bool { _, ok := inf.Get("a", "live"); return ok })

	subject := bus.HistorySubject(bus.ObjectKey{Resource: "pods", Namespace: "a", Name: "bad"})
	// Junk without a revision header is foreign to the chain.
	w.raw(ctx, subject, []byte("{{{"), nil)
	w.raw(ctx, subject, []byte(`{"type":"ADDED","revision":5,"resource":"pods","name":"bad","namespace":"a","object":{"metadata":{"name":"bad"}}}`), nil)
	// Junk with chain headers takes its place in the chain.
	cases := []struct {
		name string
		data string // %[1]d is the revision
	}{
		{"unknown type", `{"type":"EXPLODED","revision":%[1]d,"resource":"pods","name":"bad","object":{}}`},
		{"incomplete event", `{"type":"ADDED","revision":%[1]d,"resource":"pods"}`},
		{"another resource", `{"type":"ADDED","revision":%[1]d,"resource":"secrets","name":"bad","namespace":"a","object":{"metadata":{"name":"bad"}}}`},
		{"object is not a pod", `{"type":"ADDED","revision":%[1]d,"resource":"pods","name":"bad","namespace":"a","object":{"spec":42}}`},
		{"object named otherwise", `{"type":"ADDED","revision":%[1]d,"resource":"pods","name":"bad","namespace":"a","object":{"metadata":{"name":"other"}}}`},
		{"revisions disagree", `{"type":"ADDED","revision":1%[1]d,"resource":"pods","name":"bad","namespace":"a","object":{"metadata":{"name":"bad"}}}`},
		{"not JSON", `{"type":`},
	}
	for _, tc := range cases {
		w.junk(ctx, subject, func(rev int64) string { return fmt.Sprintf(tc.data, rev) })
	}
	w.raw(ctx, bus.GapSubject, []byte(`{"type":"GAP"}`), nil)
	// The chain goes on after the junk.
	w.put(ctx, pod("a", "after", "", nil))
	eventually(t, 10*time.Second, "the event after the junk", func() bool { _, ok := inf.Get("a", "after"); return ok })

	want := 1 + 2 + len(cases) + 1 // the state message, the history junk, the gap junk
	if s := inf.Stats(); s.Malformed != uint64(want) || s.Gaps != 0 || s.Resyncs != 0 {
		t.Errorf("stats %+v: want %d malformed messages and no gaps", s, want)
	}
	if _, ok := inf.Get("a", "bad"); ok {
		t.Error("a malformed event reached the cache")
	}
	if _, ok := inf.Get("a", "junk"); ok {
		t.Error("a malformed state message reached the cache")
	}
	if _, problems := rec.snapshot(); len(problems) > 0 {
		t.Error(problems)
	}
}

func TestIntegrationNATSRestart(t *testing.T) {
	skipShort(t)
	ctx := testContext(t)
	n := startNATS(t)
	js := n.connect(ctx)
	etcd := newFakeEtcd()
	runPublisher(t, ctx, js, etcd)
	inf := newPodInformer(t, js, Config[*corev1.Pod]{Component: "restart"})
	rec := newRecorder()
	inf.AddHandler(rec)
	runInformer(t, ctx, inf)
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}

	// A writer changes pods all along; NATS goes away and comes back in
	// the middle of it.
	writes := make(chan int)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := range writes {
			name := fmt.Sprint("p", i%40)
			if i%7 == 3 && etcd.pods()["a/"+name] != "" {
				etcd.del(podKey("a", name))
				continue
			}
			etcd.put(podKey("a", name), mustJSON(t, pod("a", name, fmt.Sprint("node-", i%3), map[string]string{"i": fmt.Sprint(i)})))
		}
	}()
	write := func(from, to int) {
		for i := from; i < to; i++ {
			writes <- i
		}
	}
	write(0, 200)
	eventually(t, 10*time.Second, "the informer to follow", func() bool { return inf.Revision() > 50 })
	n.stop()
	write(200, 300) // the publisher retries these
	n.start()
	write(300, 500)
	close(writes)
	<-writerDone
	converges(t, inf, rec, etcd.pods)
	if got, want := inf.Revision(), etcd.revision(); got != want {
		t.Errorf("Revision() = %d, want %d", got, want)
	}
	t.Logf("stats after the restart: %+v", inf.Stats())
}

func TestIntegrationNodeMode(t *testing.T) {
	skipShort(t)
	ctx := testContext(t)
	n := startNATS(t)
	js := n.connect(ctx)
	etcd := newFakeEtcd()
	for i := range 12 {
		etcd.put(podKey("a", fmt.Sprint("p", i)), mustJSON(t, pod("a", fmt.Sprint("p", i), []string{"node-a", "node-b", ""}[i%3], nil)))
	}
	runPublisher(t, ctx, js, etcd)
	inf := newPodInformer(t, js, Config[*corev1.Pod]{Component: "kubelet", Node: "node-a"})
	rec := newRecorder()
	inf.AddHandler(rec)
	runInformer(t, ctx, inf)
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := 0; i < 12; i += 3 {
		want[fmt.Sprint("a/p", i)] = etcd.pods()[fmt.Sprint("a/p", i)]
	}
	converges(t, inf, rec, func() map[string]string { return want })

	// Bind an unbound pod to node-a, change one on node-b, delete one on node-a.
	want["a/p2"] = fmt.Sprint(etcd.put(podKey("a", "p2"), mustJSON(t, pod("a", "p2", "node-a", nil))))
	etcd.put(podKey("a", "p1"), mustJSON(t, pod("a", "p1", "node-b", map[string]string{"x": "y"})))
	etcd.del(podKey("a", "p0"))
	delete(want, "a/p0")
	etcd.put(podKey("b", "other"), mustJSON(t, pod("b", "other", "node-b", nil)))
	want["a/p3"] = fmt.Sprint(etcd.put(podKey("a", "p3"), mustJSON(t, pod("a", "p3", "node-a", map[string]string{"v": "2"}))))
	converges(t, inf, rec, func() map[string]string { return want })
	for _, p := range inf.List() {
		if p.Spec.NodeName != "node-a" {
			t.Errorf("%s on %q is in node-a's cache", key(p), p.Spec.NodeName)
		}
	}
	if s := inf.Stats(); s.Gaps != 0 {
		t.Errorf("stats %+v: want no gaps", s)
	}
}

func TestIntegrationDurableConflict(t *testing.T) {
	skipShort(t)
	ctx := testContext(t)
	n := startNATS(t)
	js := n.connect(ctx)
	w := newBusWriter(t, js)
	w.put(ctx, pod("a", "p", "", nil))
	first := newPodInformer(t, js, Config[*corev1.Pod]{Component: "twin"})
	errc := make(chan error, 1)
	go func() { errc <- first.Run(ctx) }()
	if err := first.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	// A second process with the same durable name takes the durable over.
	second := newPodInformer(t, js, Config[*corev1.Pod]{Component: "twin"})
	runInformer(t, ctx, second)
	if err := second.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, ErrDurableConflict) {
			t.Fatalf("first Run = %v, want ErrDurableConflict", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the first informer did not notice it lost its durable")
	}
	// With an Instance each has its own.
	third := newPodInformer(t, js, Config[*corev1.Pod]{Component: "twin", Instance: "replica-2"})
	runInformer(t, ctx, third)
	if err := third.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	w.put(ctx, pod("a", "q", "", nil))
	for _, inf := range []*Informer[*corev1.Pod]{second, third} {
		eventually(t, 10*time.Second, "both to see q", func() bool { _, ok := inf.Get("a", "q"); return ok })
	}
}

func TestRunTwice(t *testing.T) {
	inf, err := New(Config[*corev1.Pod]{JetStream: stubJS{}, Component: "x", Resource: "pods", New: func() *corev1.Pod { return &corev1.Pod{} }, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = inf.Run(ctx)
	if err := inf.Run(ctx); !errors.Is(err, ErrRunning) {
		t.Fatalf("second Run = %v, want ErrRunning", err)
	}
}

// gate is a handler that blocks on the pod named "gate" until opened.
type gate struct {
	HandlerFuncs[*corev1.Pod]
	reached, open chan struct{}
}

func newGate() *gate {
	g := &gate{reached: make(chan struct{}), open: make(chan struct{})}
	g.AddFunc = func(p *corev1.Pod) {
		if p.Name == "gate" {
			close(g.reached)
			<-g.open
		}
	}
	return g
}

func TestIntegrationEvictedMessagesResync(t *testing.T) {
	skipShort(t)
	ctx := testContext(t)
	n := startNATS(t)
	js := n.connect(ctx)
	// A small history: messages the informer has not read get evicted.
	if err := bus.EnsureStreams(ctx, js, bus.StreamLimits{MaxBytes: 64 << 10}); err != nil {
		t.Fatal(err)
	}
	w := newBusWriter(t, js)
	for i := range 5 {
		w.put(ctx, pod("a", fmt.Sprint("p", i), "", nil))
	}
	inf := newPodInformer(t, js, Config[*corev1.Pod]{Component: "evict"})
	g := newGate()
	inf.AddHandler(g)
	rec := newRecorder()
	inf.AddHandler(rec)
	runInformer(t, ctx, inf)
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}

	w.put(ctx, pod("a", "gate", "", nil))
	<-g.reached // the informer is stuck in a handler
	for i := range 1000 {
		w.put(ctx, pod("a", fmt.Sprint("p", i%60), "", map[string]string{"i": fmt.Sprint(i)}))
		if i%9 == 0 {
			w.del(ctx, pod("a", fmt.Sprint("p", i%60), "", nil))
		}
	}
	st, err := js.Stream(ctx, bus.HistoryStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.FirstSeq < 500 {
		t.Fatalf("the stream kept messages from %d on; the test needs it to evict", info.State.FirstSeq)
	}
	close(g.open)
	converges(t, inf, rec, w.view)
	if s := inf.Stats(); s.Gaps < 1 || s.Resyncs < 1 {
		t.Errorf("stats %+v: want a gap and a resync", s)
	}
}

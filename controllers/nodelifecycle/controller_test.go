package nodelifecycle

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) step(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// store is a cache the test fills from the fake API.
type store[T metav1.Object] struct {
	mu   sync.Mutex
	objs map[string]T
}

func newStore[T metav1.Object]() *store[T] { return &store[T]{objs: map[string]T{}} }

func (s *store[T]) Get(ns, name string) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.objs[ns+"/"+name]
	return v, ok
}

func (s *store[T]) List() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]T, 0, len(s.objs))
	for _, v := range s.objs {
		out = append(out, v)
	}
	return out
}

func (s *store[T]) set(objs []T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objs = map[string]T{}
	for _, o := range objs {
		s.objs[o.GetNamespace()+"/"+o.GetName()] = o
	}
}

type podStore struct{ *store[*corev1.Pod] }

func (p podStore) ByIndex(index, value string) []*corev1.Pod {
	if index != cache.ByNodeName {
		panic(index)
	}
	var out []*corev1.Pod
	for _, pod := range p.List() {
		if pod.Spec.NodeName == value {
			out = append(out, pod)
		}
	}
	return out
}

type fixture struct {
	t      *testing.T
	clock  *fakeClock
	client *fake.Clientset
	nodes  *store[*corev1.Node]
	leases *store[*coordinationv1.Lease]
	pods   podStore
	c      *Controller
}

func newFixture(t *testing.T, cfg Config, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: &fakeClock{now: t0}, client: fake.NewClientset(objs...),
		nodes: newStore[*corev1.Node](), leases: newStore[*coordinationv1.Lease](), pods: podStore{newStore[*corev1.Pod]()}}
	cfg.Client, cfg.Clock = f.client, f.clock
	cfg.Options.Logger = slog.New(slog.DiscardHandler)
	cfg.Nodes, cfg.Leases, cfg.Pods = nil, nil, nil
	if err := cfg.validate(); err == nil {
		t.Fatal("validate must require the informers")
	}
	cfg.defaults()
	f.c = newController(cfg, f.nodes, f.leases, f.pods)
	f.sync()
	return f
}

// sync copies the fake API's objects into the caches, as the informers would.
func (f *fixture) sync() {
	f.t.Helper()
	ctx := context.Background()
	nodes, err := f.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var ns []*corev1.Node
	for i := range nodes.Items {
		ns = append(ns, &nodes.Items[i])
	}
	f.nodes.set(ns)
	leases, err := f.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var ls []*coordinationv1.Lease
	for i := range leases.Items {
		ls = append(ls, &leases.Items[i])
	}
	f.leases.set(ls)
	pods, err := f.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var ps []*corev1.Pod
	for i := range pods.Items {
		ps = append(ps, &pods.Items[i])
	}
	f.pods.set(ps)
	for _, n := range ns {
		l, _ := f.leases.Get(corev1.NamespaceNodeLease, n.Name)
		f.c.see(n.Name, n, l)
	}
}

// renew renews a node's lease now (a live kubelet).
func (f *fixture) renew(name string) {
	f.t.Helper()
	l, err := f.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	l.Spec.RenewTime = &metav1.MicroTime{Time: f.clock.Now()}
	if _, err := f.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) reconcileNode(name string) controllers.Result {
	f.t.Helper()
	res, err := f.c.reconcileNode(context.Background(), controllers.Request{Name: name})
	if err != nil {
		f.t.Fatalf("reconcileNode(%s): %v", name, err)
	}
	f.sync()
	return res
}

func (f *fixture) reconcileEvictions(name string) controllers.Result {
	f.t.Helper()
	res, err := f.c.reconcileEvictions(context.Background(), controllers.Request{Name: name})
	if err != nil {
		f.t.Fatalf("reconcileEvictions(%s): %v", name, err)
	}
	f.sync()
	return res
}

func (f *fixture) node(name string) *corev1.Node {
	f.t.Helper()
	n, err := f.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// writes lists the writes made so far as "verb resource[/subresource] name".
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		res := a.GetResource().Resource
		if a.GetSubresource() != "" {
			res += "/" + a.GetSubresource()
		}
		name := ""
		switch a := a.(type) {
		case k8stesting.GetAction:
			name = a.GetName()
		case k8stesting.UpdateAction:
			name = a.GetObject().(metav1.Object).GetName()
		}
		if res == "leases" {
			continue
		}
		out = append(out, a.GetVerb()+" "+res+" "+name)
	}
	f.client.ClearActions()
	return out
}

func testNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			LastHeartbeatTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(t0)}}}}
}

func testLease(name string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &name, RenewTime: &metav1.MicroTime{Time: t0}}}
}

func testPod(name, node string, ready bool, tols ...corev1.Toleration) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:   corev1.PodSpec{NodeName: node, Tolerations: tols},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}}
}

func tolFor(key string, secs int64) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs}
}

func TestReconcileNodeHealthyWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, testNode("n1"), testLease("n1"))
	f.clock.step(10 * time.Second)
	res := f.reconcileNode("n1")
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("writes = %q, want none", w)
	}
	if res.RequeueAfter != 30*time.Second {
		t.Fatalf("RequeueAfter = %v, want the rest of the grace period (30s)", res.RequeueAfter)
	}
}

func TestReconcileNodeSilentThenBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{GracePeriod: 40 * time.Second},
		testNode("n1"), testLease("n1"), testNode("n2"), testLease("n2"),
		testPod("ready", "n1", true), testPod("unready", "n1", false), testPod("elsewhere", "n2", true))

	f.clock.step(41 * time.Second)
	f.renew("n2")
	f.sync()
	f.reconcileNode("n2")
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("healthy n2: writes = %q, want none", w)
	}

	f.reconcileNode("n1")
	want := []string{"update nodes/status n1", "update pods/status ready", "patch nodes n1"}
	if w := f.writes(); !slices.Equal(w, want) {
		t.Fatalf("writes = %q, want %q", w, want)
	}
	n := f.node("n1")
	if r := condition(n.Status.Conditions, corev1.NodeReady); r.Status != corev1.ConditionUnknown || r.Reason != ReasonNodeStatusUnknown {
		t.Fatalf("Ready = %+v", r)
	}
	if got := taintsString(n.Spec.Taints); got != corev1.TaintNodeUnreachable+":NoSchedule "+corev1.TaintNodeUnreachable+":NoExecute@41" {
		t.Fatalf("taints = %q", got)
	}
	pods, _ := f.client.CoreV1().Pods("default").Get(context.Background(), "ready", metav1.GetOptions{})
	if podReady(pods) {
		t.Fatal("the pod on the silent node is still ready")
	}

	// Nothing more to do while it stays silent.
	f.clock.step(5 * time.Second)
	f.reconcileNode("n1")
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("writes = %q, want none", w)
	}

	// The kubelet comes back: it posts Ready and renews; the taints go.
	n = f.node("n1")
	r := condition(n.Status.Conditions, corev1.NodeReady)
	r.Status, r.LastHeartbeatTime = corev1.ConditionTrue, metav1.NewTime(f.clock.Now())
	if _, err := f.client.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.renew("n1")
	f.sync()
	f.client.ClearActions()
	f.reconcileNode("n1")
	if w := f.writes(); !slices.Equal(w, []string{"patch nodes n1"}) {
		t.Fatalf("writes = %q, want the taints patched", w)
	}
	if n := f.node("n1"); len(n.Spec.Taints) != 0 {
		t.Fatalf("taints = %q, want none", taintsString(n.Spec.Taints))
	}
}

func TestReconcileNodeRateLimitsNoExecute(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{EvictionRate: 0.1},
		testNode("a"), testLease("a"), testNode("b"), testLease("b"), testNode("c"), testLease("c"))
	f.clock.step(41 * time.Second)
	f.renew("c")
	f.sync()
	f.reconcileNode("a")
	res := f.reconcileNode("b")
	if got := taintsString(f.node("a").Spec.Taints); got != corev1.TaintNodeUnreachable+":NoSchedule "+corev1.TaintNodeUnreachable+":NoExecute@41" {
		t.Fatalf("a's taints = %q", got)
	}
	if got := taintsString(f.node("b").Spec.Taints); got != corev1.TaintNodeUnreachable+":NoSchedule" {
		t.Fatalf("b's taints = %q, want NoSchedule only until the limiter allows", got)
	}
	if res.RequeueAfter != 10*time.Second {
		t.Fatalf("b RequeueAfter = %v, want 10s", res.RequeueAfter)
	}
	f.clock.step(10 * time.Second)
	f.renew("c")
	f.sync()
	f.reconcileNode("b")
	if got := taintsString(f.node("b").Spec.Taints); got != corev1.TaintNodeUnreachable+":NoSchedule "+corev1.TaintNodeUnreachable+":NoExecute@51" {
		t.Fatalf("b's taints = %q", got)
	}
}

func TestReconcileNodeHoldsNoExecuteWhenEveryNodeIsDown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{MonitorPeriod: 5 * time.Second}, testNode("only"), testLease("only"))
	f.clock.step(41 * time.Second)
	f.reconcileNode("only")
	res := f.reconcileNode("only") // the zone snapshot is now of an unknown node
	f.clock.step(5 * time.Second)
	res = f.reconcileNode("only")
	if got := taintsString(f.node("only").Spec.Taints); got != corev1.TaintNodeUnreachable+":NoSchedule" {
		t.Fatalf("taints = %q, want NoSchedule only", got)
	}
	if res.RequeueAfter != 5*time.Second {
		t.Fatalf("RequeueAfter = %v, want the monitor period", res.RequeueAfter)
	}
}

func TestReconcileEvictions(t *testing.T) {
	t.Parallel()
	node := testNode("n1")
	node.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: mtime(t0)}}
	f := newFixture(t, Config{}, node, testLease("n1"),
		testPod("bare", "n1", true),
		testPod("tolerant", "n1", true, tolFor(corev1.TaintNodeUnreachable, 30)),
		testPod("daemon", "n1", true, corev1.Toleration{Operator: corev1.TolerationOpExists}),
		testPod("other-node", "n2", true))
	f.clock.step(time.Second)
	res := f.reconcileEvictions("n1")
	if w := f.writes(); !slices.Equal(w, []string{"patch pods/status bare", "delete pods bare"}) {
		t.Fatalf("writes = %q, want bare's condition and deletion", w)
	}
	if _, err := f.client.CoreV1().Pods("default").Get(context.Background(), "bare", metav1.GetOptions{}); err == nil {
		t.Fatal("bare was not deleted")
	}
	if res.RequeueAfter != 29*time.Second {
		t.Fatalf("RequeueAfter = %v, want 29s", res.RequeueAfter)
	}
	f.clock.step(29 * time.Second)
	res = f.reconcileEvictions("n1")
	if res.RequeueAfter != 0 {
		t.Fatalf("RequeueAfter = %v, want none", res.RequeueAfter)
	}
	pods, err := f.client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range pods.Items {
		left = append(left, p.Name)
	}
	slices.Sort(left)
	if !slices.Equal(left, []string{"daemon", "other-node"}) {
		t.Fatalf("pods left = %v", left)
	}
}

func TestReconcileEvictionsUntaintedNode(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, testNode("n1"), testPod("p", "n1", true))
	if res := f.reconcileEvictions("n1"); res.RequeueAfter != 0 {
		t.Fatalf("RequeueAfter = %v", res.RequeueAfter)
	}
	if res := f.reconcileEvictions("gone"); res.RequeueAfter != 0 {
		t.Fatalf("RequeueAfter = %v", res.RequeueAfter)
	}
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("writes = %q, want none", w)
	}
}

func TestLeavingFullDisruptionGivesAFreshGracePeriod(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{MonitorPeriod: time.Second}, testNode("a"), testLease("a"), testNode("b"), testLease("b"))
	f.clock.step(41 * time.Second)
	f.reconcileNode("a")
	f.reconcileNode("b")
	f.clock.step(time.Second)
	f.reconcileNode("a") // the zone snapshot now sees no ready node
	if !f.c.zoneSnapshot(f.clock.Now()).allDisrupted {
		t.Fatal("want full disruption")
	}
	for _, name := range []string{"a", "b"} {
		for _, tt := range f.node(name).Spec.Taints {
			if tt.Effect == corev1.TaintEffectNoExecute {
				t.Fatalf("node %s keeps %s:NoExecute during full disruption", name, tt.Key)
			}
		}
	}

	// b's kubelet comes back; once the zones are recomputed, a gets a fresh
	// grace period before it can be tainted NoExecute again.
	n := f.node("b")
	r := condition(n.Status.Conditions, corev1.NodeReady)
	r.Status, r.LastHeartbeatTime = corev1.ConditionTrue, metav1.NewTime(f.clock.Now())
	if _, err := f.client.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync()
	f.clock.step(time.Second)
	if f.c.zoneSnapshot(f.clock.Now()).allDisrupted {
		t.Fatal("still in full disruption")
	}
	f.c.mu.Lock()
	probe := f.c.beats["a"].probe
	f.c.mu.Unlock()
	if !probe.Equal(f.clock.Now()) {
		t.Fatalf("a's probe = %v, want reset to %v", probe, f.clock.Now())
	}
}

func TestLeaseWithoutNodeIsNotTracked(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	f.c.onLease(testLease("ghost"))
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	if _, ok := f.c.beats["ghost"]; ok {
		t.Fatal("a lease without a node was tracked")
	}
}

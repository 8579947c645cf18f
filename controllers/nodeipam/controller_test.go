package nodeipam

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/controllers"
)

// fakeNodes is a node cache the test fills.
type fakeNodes struct {
	mu    sync.Mutex
	nodes map[string]*corev1.Node
	lists int // calls of List
}

func (f *fakeNodes) Get(_, name string) (*corev1.Node, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.nodes[name]
	return n, ok
}

func (f *fakeNodes) List() []*corev1.Node {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	out := make([]*corev1.Node, 0, len(f.nodes))
	for _, n := range f.nodes {
		out = append(out, n)
	}
	return out
}

func (f *fakeNodes) listCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists
}

func (f *fakeNodes) set(n *corev1.Node) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes[n.Name] = n
}

func (f *fakeNodes) del(name string) *corev1.Node {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.nodes[name]
	delete(f.nodes, name)
	return n
}

func node(name, cidr string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"}}
	if cidr != "" {
		n.Spec.PodCIDR, n.Spec.PodCIDRs = cidr, []string{cidr}
	}
	return n
}

func setup(t *testing.T, nodes ...*corev1.Node) (*reconciler, *fakeNodes, *fake.Clientset) {
	t.Helper()
	cache := &fakeNodes{nodes: map[string]*corev1.Node{}}
	objs := make([]runtime.Object, 0, len(nodes))
	for _, n := range nodes {
		cache.nodes[n.Name] = n
		objs = append(objs, n.DeepCopy())
	}
	set, err := newCIDRSet("10.244.0.0/16", 24)
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(objs...)
	return newReconciler(client, cache, set, slog.New(slog.DiscardHandler)), cache, client
}

func patches(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			out = append(out, p.GetName()+" "+string(p.GetPatch()))
		}
	}
	return out
}

func reconcile(t *testing.T, r *reconciler, name string) {
	t.Helper()
	if _, err := r.Reconcile(context.Background(), controllers.Request{Name: name}); err != nil {
		t.Fatalf("Reconcile(%s): %v", name, err)
	}
}

func TestReconcileAssignsFreeSubnet(t *testing.T) {
	t.Parallel()
	r, _, client := setup(t, node("a", "10.244.0.0/24"), node("b", ""))
	reconcile(t, r, "b")
	want := `b {"metadata":{"resourceVersion":"1"},"spec":{"podCIDR":"10.244.1.0/24","podCIDRs":["10.244.1.0/24"]}}`
	if got := patches(client); len(got) != 1 || got[0] != want {
		t.Fatalf("patches = %q, want [%q]", got, want)
	}
}

func TestReconcileNeverReassigns(t *testing.T) {
	t.Parallel()
	r, _, client := setup(t, node("a", "10.244.9.0/24"))
	reconcile(t, r, "a")
	reconcile(t, r, "missing")
	if got := patches(client); len(got) != 0 {
		t.Fatalf("patches = %q, want none", got)
	}
}

func TestReconcileKeepsSubnetsDistinctBeforeTheCacheCatchesUp(t *testing.T) {
	t.Parallel()
	r, cache, client := setup(t, node("a", ""), node("b", ""))
	reconcile(t, r, "a")
	reconcile(t, r, "b")
	reconcile(t, r, "a") // the cache still shows a without a subnet: same one again
	got := patches(client)
	if len(got) != 3 {
		t.Fatalf("patches = %q, want 3", got)
	}
	if got[0] == got[1] || got[0] != got[2] {
		t.Fatalf("patches = %q: want a and b distinct and a's retry identical", got)
	}
	// The cache catches up: the reservation is released and nothing is written.
	cache.mu.Lock()
	cache.nodes["a"] = node("a", "10.244.0.0/24")
	cache.mu.Unlock()
	reconcile(t, r, "a")
	if len(r.pending) != 1 {
		t.Fatalf("pending = %v, want only b", r.pending)
	}
	if n := len(patches(client)); n != 3 {
		t.Fatalf("%d patches, want still 3", n)
	}
}

func TestReconcileFullClusterCIDR(t *testing.T) {
	t.Parallel()
	cache := &fakeNodes{nodes: map[string]*corev1.Node{"a": node("a", "10.244.0.0/24"), "b": node("b", "")}}
	set, err := newCIDRSet("10.244.0.0/24", 24)
	if err == nil {
		t.Fatalf("a /24 cut into /24s must be rejected, got %v", set)
	}
	set, _ = newCIDRSet("10.244.0.0/23", 24)
	cache.nodes["c"] = node("c", "10.244.1.0/24")
	client := fake.NewClientset()
	r := newReconciler(client, cache, set, slog.New(slog.DiscardHandler))
	reconcile(t, r, "b") // full: logged, not retried
	if !r.full {
		t.Fatal("full not recorded")
	}
	if got := patches(client); len(got) != 0 {
		t.Fatalf("patches = %q, want none", got)
	}
}

// warnings counts the records at Warn level a logger is given.
type warnings struct {
	mu sync.Mutex
	n  int
}

func (w *warnings) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w *warnings) WithGroup(string) slog.Handler            { return w }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		w.mu.Lock()
		w.n++
		w.mu.Unlock()
	}
	return nil
}

func (w *warnings) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// full is a reconciler over a cluster CIDR of two /24s, node a holding
// the first and the waiting nodes none, with a queue, a recorder and a
// logger to watch.
type full struct {
	r      *reconciler
	cache  *fakeNodes
	client *fake.Clientset
	events *record.FakeRecorder
	warns  *warnings
}

func fullSetup(t *testing.T, waiting ...string) full {
	t.Helper()
	cache := &fakeNodes{nodes: map[string]*corev1.Node{"a": node("a", "10.244.0.0/24")}}
	objs := []runtime.Object{node("a", "10.244.0.0/24")}
	for _, name := range waiting {
		cache.nodes[name] = node(name, "")
		objs = append(objs, node(name, ""))
	}
	set, err := newCIDRSet("10.244.0.0/23", 24)
	if err != nil {
		t.Fatal(err)
	}
	f := full{cache: cache, client: fake.NewClientset(objs...), events: record.NewFakeRecorder(100), warns: &warnings{}}
	f.r = newReconciler(f.client, cache, set, slog.New(f.warns))
	f.r.recorder = f.events
	f.r.ctrl = controllers.New(Name, f.r, controllers.Options{Logger: slog.New(slog.DiscardHandler)})
	return f
}

// drain returns the events recorded so far.
func (f full) drain() []string {
	var out []string
	for {
		select {
		case e := <-f.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// Once no subnet is left, the nodes that wait (each update of each of them
// comes back to Reconcile) are answered without walking every node again,
// with one warning and one CIDRNotAvailable event per node, until a node
// is deleted; then they are all queued and one gets the subnet.
func TestReconcileFullLooksOnceUntilANodeGoes(t *testing.T) {
	t.Parallel()
	f := fullSetup(t, "b", "c", "d")
	f.cache.set(node("b", "10.244.1.0/24")) // b holds the second
	reconcile(t, f.r, "c")
	if !f.r.full {
		t.Fatal("full not recorded")
	}
	looked := f.cache.listCalls()
	for range 3 {
		reconcile(t, f.r, "c")
		reconcile(t, f.r, "d")
	}
	if got := f.cache.listCalls(); got != looked {
		t.Fatalf("the waiting nodes' reconciles listed the nodes %d more times, want none", got-looked)
	}
	if got := f.warns.count(); got != 1 {
		t.Fatalf("%d warnings, want 1", got)
	}
	want := []string{"Normal CIDRNotAvailable Node c status is now: CIDRNotAvailable", "Normal CIDRNotAvailable Node d status is now: CIDRNotAvailable"}
	if got := f.drain(); !slices.Equal(got, want) {
		t.Fatalf("events = %q, want %q", got, want)
	}

	f.r.onDelete(f.cache.del("b"))
	if f.r.full {
		t.Fatal("full still set after a node holding a subnet was deleted")
	}
	if got := f.r.ctrl.Len(); got != 3 { // b itself, c and d
		t.Fatalf("%d requests queued after the delete, want 3", got)
	}
	reconcile(t, f.r, "c")
	if got := patches(f.client); len(got) != 1 || !strings.HasPrefix(got[0], "c ") || !strings.Contains(got[0], "10.244.1.0/24") {
		t.Fatalf("patches = %q, want c given 10.244.1.0/24", got)
	}
	// Full again: a second episode warns and tells d again.
	reconcile(t, f.r, "d")
	if got := f.warns.count(); got != 2 {
		t.Fatalf("%d warnings after the range filled again, want 2", got)
	}
	if got := f.drain(); len(got) != 1 || !strings.Contains(got[0], "Node d ") {
		t.Fatalf("events = %q, want one for d", got)
	}
}

// A reservation whose node went away before its cache copy showed the
// subnet frees the subnet for the nodes that wait; one the node holds does
// not.
func TestReleaseFreesOnlyWhatTheNodeDoesNotHold(t *testing.T) {
	t.Parallel()
	f := fullSetup(t, "b", "c", "d")
	reconcile(t, f.r, "b") // reserved 10.244.1.0/24, the cache does not show it yet
	reconcile(t, f.r, "c") // full: the reservation counts as used
	if !f.r.full {
		t.Fatal("full not recorded")
	}
	f.cache.set(node("b", "10.244.1.0/24"))
	reconcile(t, f.r, "b") // the cache caught up: b holds it
	if !f.r.full || f.r.ctrl.Len() != 0 {
		t.Fatalf("full=%v queued=%d after b's subnet showed up, want still full and nothing queued", f.r.full, f.r.ctrl.Len())
	}

	g := fullSetup(t, "b", "c")
	reconcile(t, g.r, "b")
	reconcile(t, g.r, "c")
	g.cache.del("b") // gone before its cache copy showed the subnet
	reconcile(t, g.r, "b")
	if g.r.full || g.r.ctrl.Len() != 1 {
		t.Fatalf("full=%v queued=%d after b went, want the subnet free and c queued", g.r.full, g.r.ctrl.Len())
	}
	reconcile(t, g.r, "c")
	got := patches(g.client)
	if len(got) != 2 || !strings.HasPrefix(got[1], "c ") || !strings.Contains(got[1], "10.244.1.0/24") {
		t.Fatalf("patches = %q, want b's then c's, both 10.244.1.0/24", got)
	}
}

// A node whose patch finds it gone (deleted after the cache read it)
// drops its reservation, and that wakes the nodes waiting for it.
func TestPatchOfAGoneNodeFreesItsReservation(t *testing.T) {
	t.Parallel()
	f := fullSetup(t, "b", "c")
	f.client.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.PatchAction).GetName() == "b" {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "b")
		}
		return false, nil, nil
	})
	if _, err := f.r.Reconcile(context.Background(), controllers.Request{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	if len(f.r.pending) != 0 {
		t.Fatalf("pending = %v after b's patch found it gone, want none", f.r.pending)
	}
	// The subnet b was offered is free: c gets it.
	reconcile(t, f.r, "c")
	if got := patches(f.client); len(got) != 2 || !strings.HasPrefix(got[1], "c ") || !strings.Contains(got[1], "10.244.1.0/24") {
		t.Fatalf("patches = %q, want c given 10.244.1.0/24", got)
	}

	// The same with the range full: the dropped reservation wakes c.
	g := fullSetup(t, "b", "c")
	fail := true
	g.client.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.PatchAction).GetName() != "b" {
			return false, nil, nil
		}
		if fail {
			return true, nil, apierrors.NewServiceUnavailable("try again")
		}
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "b")
	})
	if _, err := g.r.Reconcile(context.Background(), controllers.Request{Name: "b"}); err == nil {
		t.Fatal("a failed patch must be retried")
	}
	reconcile(t, g.r, "c") // b's reservation holds the last subnet
	if !g.r.full {
		t.Fatal("full not recorded")
	}
	fail = false
	reconcile(t, g.r, "b") // NotFound: b went (its cache copy is still there)
	if g.r.full || g.r.ctrl.Len() != 2 {
		t.Fatalf("full=%v queued=%d after b's patch found it gone, want b and c queued", g.r.full, g.r.ctrl.Len())
	}
}

// The cache can show a node's subnet changed or cleared (a node deleted
// and created again, merged into one update by a relist): that wakes the
// nodes that wait; an update that keeps the subnet does not.
func TestUpdateThatDropsASubnetWakesTheWaiting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, next string }{{"cleared", ""}, {"changed", "10.244.9.0/24"}} {
		t.Run(tc.name, func(t *testing.T) {
			f := fullSetup(t, "b", "c")
			f.cache.set(node("b", "10.244.1.0/24"))
			reconcile(t, f.r, "c")
			if !f.r.full {
				t.Fatal("full not recorded")
			}
			a := node("a", "10.244.0.0/24")
			f.r.onUpdate(a, a.DeepCopy())
			if !f.r.full || f.r.ctrl.Len() != 0 {
				t.Fatalf("full=%v queued=%d after an update that kept a's subnet", f.r.full, f.r.ctrl.Len())
			}
			next := node("a", tc.next)
			f.cache.set(next)
			f.r.onUpdate(a, next)
			if f.r.full {
				t.Fatal("full still set after a's subnet changed")
			}
			want := 1 // c
			if tc.next == "" {
				want = 2 // and a, now without one
			}
			if got := f.r.ctrl.Len(); got != want {
				t.Fatalf("%d requests queued, want %d", got, want)
			}
		})
	}
}

package nodeipam

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubebus/kubebus/controllers"
)

// fakeNodes is a node cache the test fills.
type fakeNodes struct {
	mu    sync.Mutex
	nodes map[string]*corev1.Node
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
	out := make([]*corev1.Node, 0, len(f.nodes))
	for _, n := range f.nodes {
		out = append(out, n)
	}
	return out
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

package statefulset

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/controllers"
)

func TestHandlers(t *testing.T) {
	t.Parallel()
	set := testSet(2)
	other := testSet(1, func(s *appsv1.StatefulSet) {
		s.Name, s.UID = "db", "uid-db"
		s.Spec.Selector.MatchLabels = map[string]string{"app": "db"}
	})
	f := newFixture(t, set)
	f.sets.Put(other)
	var got []string
	f.r.register(func(r controllers.Request) { got = append(got, r.String()) })
	take := func() []string { out := got; got = nil; slices.Sort(out); return out }

	owned := testPod(set, 0, "r1", "ready")
	f.pods.Set(owned)
	if g := take(); !slices.Equal(g, []string{"ns/web"}) {
		t.Fatalf("owned pod added: %v", g)
	}
	orphan := testPod(set, 5, "r1", "ready")
	orphan.OwnerReferences = nil
	f.pods.Set(orphan)
	if g := take(); !slices.Equal(g, []string{"ns/web"}) {
		t.Fatalf("orphan added: %v", g)
	}
	stranger := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x", Labels: map[string]string{"app": "none"}}}
	f.pods.Set(stranger)
	if g := take(); len(g) != 0 {
		t.Fatalf("unrelated pod added: %v", g)
	}
	// Released from web to db: both hear of it.
	moved := owned.DeepCopy()
	moved.ResourceVersion = "9"
	moved.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(other, kind)}
	f.pods.Set(moved)
	if g := take(); !slices.Equal(g, []string{"ns/db", "ns/web"}) {
		t.Fatalf("pod moved: %v", g)
	}
	f.pods.Remove(moved)
	if g := take(); !slices.Equal(g, []string{"ns/db"}) {
		t.Fatalf("pod deleted: %v", g)
	}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data-web-0",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: set.UID}}}}
	f.claims.Set(claim)
	if g := take(); !slices.Equal(g, []string{"ns/web"}) {
		t.Fatalf("claim added: %v", g)
	}
	rev, err := newRevision(set, 1, new(int32))
	if err != nil {
		t.Fatal(err)
	}
	f.revs.Set(rev)
	if g := take(); !slices.Equal(g, []string{"ns/web"}) {
		t.Fatalf("revision added: %v", g)
	}
	// A stale reference (the set was replaced) enqueues nothing.
	stale := testPod(set, 1, "r1", "ready")
	stale.OwnerReferences[0].UID = "gone"
	f.pods.Set(stale)
	if g := take(); len(g) != 0 {
		t.Fatalf("stale owner: %v", g)
	}
}

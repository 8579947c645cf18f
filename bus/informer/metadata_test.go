package informer

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/bus"
)

func TestMetadataViewSharesTheTypedCache(t *testing.T) {
	t.Parallel()
	i := &Informer[*corev1.Pod]{store: newStore[*corev1.Pod](nil)}
	v := Metadata(i)
	var seen []string
	v.AddHandler(HandlerFuncs[*metav1.PartialObjectMetadata]{
		AddFunc: func(m *metav1.PartialObjectMetadata) { seen = append(seen, "add "+m.Name+" "+m.Kind) },
		UpdateFunc: func(old, m *metav1.PartialObjectMetadata) {
			seen = append(seen, "update "+old.ResourceVersion+"->"+m.ResourceVersion)
		},
		DeleteFunc: func(m *metav1.PartialObjectMetadata) { seen = append(seen, "delete "+string(m.UID)) },
	})
	mk := func(rv string) *corev1.Pod {
		return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: types.UID("u1"), ResourceVersion: rv,
				OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: "o1"}}}}
	}
	p1, p2 := mk("1"), mk("2")
	i.store.insert(objKey{"ns", "p"}, p1, 1)
	i.update(func() []change[*corev1.Pod] {
		return []change[*corev1.Pod]{{kind: added, obj: p1}, {kind: updated, old: p1, obj: p2}, {kind: deleted, obj: p2}}
	})
	if want := []string{"add p Pod", "update 1->2", "delete u1"}; !slices.Equal(seen, want) {
		t.Fatalf("handler saw %q, want %q", seen, want)
	}
	m, ok := v.Get("ns", "p")
	if !ok || m.UID != "u1" || m.APIVersion != "v1" || len(m.OwnerReferences) != 1 {
		t.Fatalf("Get: %+v, %v", m, ok)
	}
	if &m.OwnerReferences[0] != &p1.OwnerReferences[0] {
		t.Error("the metadata copied the owner references instead of sharing the cached object's")
	}
	if _, ok := v.Get("ns", "absent"); ok {
		t.Error("Get found an absent object")
	}
	if l := v.ListNamespace("ns"); len(l) != 1 || l[0].Name != "p" {
		t.Errorf("ListNamespace: %v", l)
	}
}

// TestLateHandlerSeesTheCacheFirst: a handler added to a running informer
// is told about every cached object as added, then about later changes.
func TestLateHandlerSeesTheCacheFirst(t *testing.T) {
	t.Parallel()
	i := &Informer[*corev1.Pod]{store: newStore[*corev1.Pod](nil)}
	a := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "1"}}
	b := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", ResourceVersion: "2"}}
	i.update(func() []change[*corev1.Pod] {
		c, _ := i.store.apply(objKey{"ns", "a"}, bus.Added, a, true, 1)
		return []change[*corev1.Pod]{c}
	})
	var seen []string
	i.AddHandler(HandlerFuncs[*corev1.Pod]{
		AddFunc:    func(p *corev1.Pod) { seen = append(seen, "add "+p.Name) },
		DeleteFunc: func(p *corev1.Pod) { seen = append(seen, "delete "+p.Name) },
	})
	i.update(func() []change[*corev1.Pod] {
		c, _ := i.store.apply(objKey{"ns", "b"}, bus.Added, b, true, 2)
		d, _ := i.store.apply(objKey{"ns", "a"}, bus.Deleted, a, true, 3)
		return []change[*corev1.Pod]{c, d}
	})
	if want := []string{"add a", "add b", "delete a"}; !slices.Equal(seen, want) {
		t.Fatalf("late handler saw %q, want %q", seen, want)
	}
}

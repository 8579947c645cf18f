package informer

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	i.notify(change[*corev1.Pod]{kind: added, obj: p1}, change[*corev1.Pod]{kind: updated, old: p1, obj: p2}, change[*corev1.Pod]{kind: deleted, obj: p2})
	want := []string{"add p Pod", "update 1->2", "delete u1"}
	if len(seen) != len(want) {
		t.Fatalf("handler saw %q, want %q", seen, want)
	}
	for k := range want {
		if seen[k] != want[k] {
			t.Fatalf("handler saw %q, want %q", seen, want)
		}
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

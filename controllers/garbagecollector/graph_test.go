package garbagecollector

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var (
	configMaps = Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	secrets    = Resource{Version: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true}
)

// ref is an ownerReference to a ConfigMap with uid (blocking when block).
func ref(uid string, block bool) metav1.OwnerReference {
	r := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner-" + uid, UID: types.UID(uid)}
	if block {
		r.BlockOwnerDeletion = &block
	}
	return r
}

// object is an object named after its uid, in namespace ns.
func object(uid string, refs ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: "obj-" + uid, UID: types.UID(uid), OwnerReferences: refs,
	}}
}

// deleting returns obj marked for deletion with the finalizers.
func deleting(obj *metav1.PartialObjectMetadata, finalizers ...string) *metav1.PartialObjectMetadata {
	out := obj.DeepCopy()
	now := metav1.NewTime(time.Unix(1700000000, 0))
	out.DeletionTimestamp = &now
	out.Finalizers = finalizers
	return out
}

func uids(s ...string) []types.UID {
	out := make([]types.UID, 0, len(s))
	for _, x := range s {
		out = append(out, types.UID(x))
	}
	return out
}

func TestGraph(t *testing.T) {
	t.Parallel()
	type step struct {
		observe *metav1.PartialObjectMetadata // or
		forget  *metav1.PartialObjectMetadata
		want    []types.UID // UIDs to reconcile
	}
	tests := []struct {
		name  string
		steps []step
		// dependents of each owner UID at the end
		dependents map[string][]string
		objects    int
	}{{
		name: "an object without owners is not queued",
		steps: []step{
			{observe: object("a"), want: nil},
			{observe: object("a"), want: nil},
		},
		dependents: map[string][]string{"a": nil},
		objects:    1,
	}, {
		name: "a new dependent is queued and linked to owners, known or not",
		steps: []step{
			{observe: object("o"), want: nil},
			{observe: object("d", ref("o", true), ref("ghost", false)), want: uids("d")},
		},
		dependents: map[string][]string{"o": {"d"}, "ghost": {"d"}},
		objects:    2,
	}, {
		name: "an unchanged update queues nothing",
		steps: []step{
			{observe: object("d", ref("o", true)), want: uids("d")},
			{observe: object("d", ref("o", true)), want: nil},
		},
		dependents: map[string][]string{"o": {"d"}},
		objects:    1,
	}, {
		name: "changed references queue the object and its old and new owners",
		steps: []step{
			{observe: object("d", ref("o1", true)), want: uids("d")},
			{observe: object("d", ref("o2", false)), want: uids("d", "o1", "o2")},
		},
		dependents: map[string][]string{"o1": nil, "o2": {"d"}},
		objects:    1,
	}, {
		name: "a blockOwnerDeletion change queues the owner",
		steps: []step{
			{observe: object("d", ref("o", true)), want: uids("d")},
			{observe: object("d", ref("o", false)), want: uids("d", "o")},
		},
		dependents: map[string][]string{"o": {"d"}},
		objects:    1,
	}, {
		name: "a deletion or finalizer change queues the object alone",
		steps: []step{
			{observe: object("o"), want: nil},
			{observe: deleting(object("o"), FinalizerForeground), want: uids("o")},
			{observe: deleting(object("o")), want: uids("o")},
		},
		dependents: map[string][]string{},
		objects:    1,
	}, {
		name: "an object first seen being deleted is queued",
		steps: []step{
			{observe: deleting(object("o"), FinalizerOrphan), want: uids("o")},
		},
		objects: 1,
	}, {
		name: "forgetting an owner queues its dependents; forgetting a dependent queues its owners",
		steps: []step{
			{observe: object("o"), want: nil},
			{observe: object("d2", ref("o", true)), want: uids("d2")},
			{observe: object("d1", ref("o", true), ref("p", false)), want: uids("d1")},
			{forget: object("o"), want: uids("d1", "d2")},
			{forget: object("d1"), want: uids("o", "p")},
		},
		dependents: map[string][]string{"o": {"d2"}, "p": nil},
		objects:    1,
	}, {
		name: "forgetting uses the recorded references, not the deleted copy's",
		steps: []step{
			{observe: object("d", ref("o", true)), want: uids("d")},
			{forget: object("d"), want: uids("o")},
		},
		dependents: map[string][]string{"o": nil},
		objects:    0,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewGraph()
			for i, s := range tt.steps {
				var got []types.UID
				if s.observe != nil {
					got = g.Observe(configMaps, s.observe)
				} else {
					got = g.Forget(s.forget)
				}
				if !slices.Equal(got, s.want) {
					t.Errorf("step %d: queued %v, want %v", i, got, s.want)
				}
			}
			for owner, want := range tt.dependents {
				var got []string
				for _, d := range g.Dependents(types.UID(owner)) {
					got = append(got, string(d.Object.UID))
				}
				if !slices.Equal(got, want) {
					t.Errorf("dependents of %s = %v, want %v", owner, got, want)
				}
			}
			if g.Len() != tt.objects {
				t.Errorf("graph holds %d objects, want %d", g.Len(), tt.objects)
			}
		})
	}
}

func TestGraphGetKeepsResource(t *testing.T) {
	t.Parallel()
	g := NewGraph()
	g.Observe(secrets, object("s"))
	res, obj, ok := g.Get("s")
	if !ok || res != secrets || obj.Name != "obj-s" {
		t.Fatalf("Get = %v %v %v", res, obj, ok)
	}
	if _, _, ok := g.Get("nope"); ok {
		t.Fatal("Get of an unknown UID succeeded")
	}
}

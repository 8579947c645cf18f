package garbagecollector

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func check(r metav1.OwnerReference, s ownerState) ownerCheck { return ownerCheck{ref: r, state: s} }

func dep(obj *metav1.PartialObjectMetadata) Dependent {
	return Dependent{Resource: configMaps, Object: obj}
}

func TestPlanDependent(t *testing.T) {
	t.Parallel()
	withFinalizer := func(obj *metav1.PartialObjectMetadata, f string) *metav1.PartialObjectMetadata {
		obj.Finalizers = []string{f}
		return obj
	}
	tests := []struct {
		name   string
		obj    *metav1.PartialObjectMetadata
		owners []ownerCheck
		deps   []Dependent
		want   dependentPlan
	}{{
		name: "no owners: nothing",
		obj:  object("d"),
	}, {
		name:   "a present owner: nothing",
		obj:    object("d", ref("o", true)),
		owners: []ownerCheck{check(ref("o", true), ownerPresent)},
	}, {
		name:   "the only owner is absent: delete in the background",
		obj:    object("d", ref("o", false)),
		owners: []ownerCheck{check(ref("o", false), ownerAbsent)},
		want:   dependentPlan{Delete: true, Policy: metav1.DeletePropagationBackground},
	}, {
		name:   "an object being deleted is left to its finalizers",
		obj:    deleting(object("d", ref("o", false)), "x/hold"),
		owners: []ownerCheck{check(ref("o", false), ownerAbsent)},
	}, {
		name:   "every owner absent, the object's own orphan finalizer: delete orphaning",
		obj:    withFinalizer(object("d", ref("o", false)), FinalizerOrphan),
		owners: []ownerCheck{check(ref("o", false), ownerAbsent)},
		want:   dependentPlan{Delete: true, Policy: metav1.DeletePropagationOrphan},
	}, {
		name:   "every owner absent, the object's own foreground finalizer: delete in the foreground",
		obj:    withFinalizer(object("d", ref("o", false)), FinalizerForeground),
		owners: []ownerCheck{check(ref("o", false), ownerAbsent)},
		want:   dependentPlan{Delete: true, Policy: metav1.DeletePropagationForeground},
	}, {
		name:   "one owner present, others absent or waiting: drop those references",
		obj:    object("d", ref("a", false), ref("p", true), ref("w", true)),
		owners: []ownerCheck{check(ref("a", false), ownerAbsent), check(ref("p", true), ownerPresent), check(ref("w", true), ownerWaiting)},
		want:   dependentPlan{RemoveRefs: uids("a", "w")},
	}, {
		name:   "an owner waits and the object has no dependents: delete in the background",
		obj:    object("d", ref("w", true)),
		owners: []ownerCheck{check(ref("w", true), ownerWaiting)},
		want:   dependentPlan{Delete: true, Policy: metav1.DeletePropagationBackground},
	}, {
		name:   "an owner waits and the object has dependents: delete in the foreground",
		obj:    object("d", ref("w", true), ref("a", false)),
		owners: []ownerCheck{check(ref("w", true), ownerWaiting), check(ref("a", false), ownerAbsent)},
		deps:   []Dependent{dep(object("g", ref("d", true)))},
		want:   dependentPlan{Delete: true, Policy: metav1.DeletePropagationForeground},
	}, {
		name:   "a dependent already deleting in the foreground: unblock the waiting owners first",
		obj:    object("d", ref("w1", true), ref("w2", false), ref("w3", true)),
		owners: []ownerCheck{check(ref("w1", true), ownerWaiting), check(ref("w2", false), ownerWaiting), check(ref("w3", true), ownerWaiting)},
		deps:   []Dependent{dep(object("g1", ref("d", true))), dep(deleting(object("g2", ref("d", true)), FinalizerForeground))},
		want:   dependentPlan{Delete: true, Policy: metav1.DeletePropagationForeground, Unblock: uids("w1", "w3")},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := planDependent(tt.obj, tt.owners, tt.deps)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("planDependent = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPlanOwner(t *testing.T) {
	t.Parallel()
	d1 := dep(object("d1", ref("o", true)))
	d2 := dep(object("d2", ref("o", false), ref("x", true)))
	d3gone := dep(deleting(object("d3", ref("o", true)), "x/hold"))
	d4gone := dep(deleting(object("d4", ref("o", false))))
	tests := []struct {
		name  string
		owner *metav1.PartialObjectMetadata
		deps  []Dependent
		want  ownerPlan
	}{{
		name:  "not being deleted: nothing",
		owner: object("o"),
		deps:  []Dependent{d1},
	}, {
		name:  "being deleted without a GC finalizer: nothing",
		owner: deleting(object("o"), "x/hold"),
		deps:  []Dependent{d1},
	}, {
		name:  "orphan: every dependent loses its reference, then the finalizer goes",
		owner: deleting(object("o"), FinalizerOrphan),
		deps:  []Dependent{d1, d2},
		want:  ownerPlan{Orphan: []Dependent{d1, d2}, RemoveFinalizer: FinalizerOrphan},
	}, {
		name:  "orphan without dependents: the finalizer goes",
		owner: deleting(object("o"), "x/hold", FinalizerOrphan),
		want:  ownerPlan{RemoveFinalizer: FinalizerOrphan},
	}, {
		name:  "orphan wins over foreground",
		owner: deleting(object("o"), FinalizerForeground, FinalizerOrphan),
		deps:  []Dependent{d1},
		want:  ownerPlan{Orphan: []Dependent{d1}, RemoveFinalizer: FinalizerOrphan},
	}, {
		name:  "foreground: dependents not yet deleted are queued; blocking ones hold the finalizer",
		owner: deleting(object("o"), FinalizerForeground),
		deps:  []Dependent{d1, d2, d3gone, d4gone},
		want:  ownerPlan{Delete: uids("d1", "d2"), Blocking: 2},
	}, {
		name:  "foreground: only non-blocking dependents left: the finalizer goes",
		owner: deleting(object("o"), FinalizerForeground),
		deps:  []Dependent{d2, d4gone},
		want:  ownerPlan{Delete: uids("d2"), RemoveFinalizer: FinalizerForeground},
	}, {
		name:  "foreground: no dependents: the finalizer goes",
		owner: deleting(object("o"), FinalizerForeground),
		want:  ownerPlan{RemoveFinalizer: FinalizerForeground},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := planOwner(tt.owner, tt.deps)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("planOwner = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPatches(t *testing.T) {
	t.Parallel()
	obj := object("d", ref("a", true), ref("b", false), ref("c", true))
	obj.Finalizers = []string{"x/hold", FinalizerOrphan}
	tests := []struct {
		name  string
		patch []byte
		want  string
	}{{
		name:  "remove two references, highest index first",
		patch: removeRefsPatch(obj, uids("a", "c")),
		want: `[{"op":"test","path":"/metadata/uid","value":"d"},` +
			`{"op":"test","path":"/metadata/ownerReferences/2/uid","value":"c"},` +
			`{"op":"test","path":"/metadata/ownerReferences/0/uid","value":"a"},` +
			`{"op":"remove","path":"/metadata/ownerReferences/2"},` +
			`{"op":"remove","path":"/metadata/ownerReferences/0"}]`,
	}, {
		name:  "remove a reference the object does not have",
		patch: removeRefsPatch(obj, uids("zzz")),
	}, {
		name:  "unblock only blocking references",
		patch: unblockPatch(obj, uids("a", "b")),
		want: `[{"op":"test","path":"/metadata/uid","value":"d"},` +
			`{"op":"test","path":"/metadata/ownerReferences/0/uid","value":"a"},` +
			`{"op":"replace","path":"/metadata/ownerReferences/0/blockOwnerDeletion","value":false}]`,
	}, {
		name:  "remove a finalizer",
		patch: removeFinalizerPatch(obj, FinalizerOrphan),
		want: `[{"op":"test","path":"/metadata/uid","value":"d"},` +
			`{"op":"test","path":"/metadata/finalizers/1","value":"orphan"},` +
			`{"op":"remove","path":"/metadata/finalizers/1"}]`,
	}, {
		name:  "remove a finalizer the object does not have",
		patch: removeFinalizerPatch(obj, FinalizerForeground),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if string(tt.patch) != tt.want {
				t.Errorf("patch =\n%s\nwant\n%s", tt.patch, tt.want)
			}
		})
	}
}

func TestUIDSetStartsOverWhenFull(t *testing.T) {
	t.Parallel()
	s := newUIDSet(2)
	s.add("a")
	s.add("b")
	if !s.has("a") || !s.has("b") {
		t.Fatal("lost an entry before the set was full")
	}
	s.add("c")
	if s.has("a") || !s.has("c") {
		t.Fatal("a full set did not start over")
	}
}

package namespace

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	pods        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

func obj(name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: name}}
}

func terminating(name string, finalizers ...string) *metav1.PartialObjectMetadata {
	o := obj(name)
	now := metav1.NewTime(time.Unix(1700000000, 0))
	o.DeletionTimestamp, o.Finalizers = &now, finalizers
	return o
}

func TestPlanPass(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		contents []content
		want     pass
	}{{
		name:     "empty",
		contents: []content{{gvr: pods}, {gvr: configMaps}},
		want:     pass{Remaining: map[string]int{}, Finalizers: map[string]int{}},
	}, {
		name: "live objects: delete their collections",
		contents: []content{
			{gvr: pods, objects: []*metav1.PartialObjectMetadata{obj("a"), obj("b")}},
			{gvr: configMaps},
			{gvr: deployments, objects: []*metav1.PartialObjectMetadata{obj("d")}},
		},
		want: pass{
			Delete:     []schema.GroupVersionResource{pods, deployments},
			Remaining:  map[string]int{"pods": 2, "deployments.apps": 1},
			Finalizers: map[string]int{},
		},
	}, {
		name: "objects already being deleted are waited for, not deleted again",
		contents: []content{
			{gvr: pods, objects: []*metav1.PartialObjectMetadata{terminating("a"), terminating("b", "x/hold", "y/hold")}},
			{gvr: configMaps, objects: []*metav1.PartialObjectMetadata{terminating("c", "x/hold"), obj("d")}},
		},
		want: pass{
			Delete:     []schema.GroupVersionResource{configMaps},
			Remaining:  map[string]int{"pods": 2, "configmaps": 2},
			Finalizers: map[string]int{"x/hold": 2, "y/hold": 1},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := planPass(tt.contents)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("planPass = %+v, want %+v", got, tt.want)
			}
			if got.Empty() != (len(tt.want.Remaining) == 0) {
				t.Errorf("Empty = %v", got.Empty())
			}
		})
	}
}

func TestConditions(t *testing.T) {
	t.Parallel()
	byType := func(cs []corev1.NamespaceCondition) map[corev1.NamespaceConditionType]corev1.NamespaceCondition {
		m := map[corev1.NamespaceConditionType]corev1.NamespaceCondition{}
		for _, c := range cs {
			m[c.Type] = c
		}
		return m
	}
	tests := []struct {
		name     string
		pass     pass
		failures []string
		want     map[corev1.NamespaceConditionType]string // status/reason/message
	}{{
		name: "all gone",
		pass: pass{},
		want: map[corev1.NamespaceConditionType]string{
			corev1.NamespaceDeletionDiscoveryFailure: "False/ResourcesDiscovered/All resources successfully discovered",
			corev1.NamespaceDeletionGVParsingFailure: "False/ParsedGroupVersions/All legacy kube types successfully parsed",
			corev1.NamespaceDeletionContentFailure:   "False/ContentDeleted/All content successfully deleted, may be waiting on finalization",
			corev1.NamespaceContentRemaining:         "False/ContentRemoved/All content successfully removed",
			corev1.NamespaceFinalizersRemaining:      "False/ContentHasNoFinalizers/All content-preserving finalizers have been removed",
		},
	}, {
		name:     "content and finalizers remain, a deletion failed",
		pass:     pass{Remaining: map[string]int{"pods": 2, "configmaps": 1}, Finalizers: map[string]int{"x/hold": 1}},
		failures: []string{"pods: boom"},
		want: map[corev1.NamespaceConditionType]string{
			corev1.NamespaceDeletionDiscoveryFailure: "False/ResourcesDiscovered/All resources successfully discovered",
			corev1.NamespaceDeletionGVParsingFailure: "False/ParsedGroupVersions/All legacy kube types successfully parsed",
			corev1.NamespaceDeletionContentFailure:   "True/ContentDeletionFailed/Failed to delete all resource types, 1 remaining: pods: boom",
			corev1.NamespaceContentRemaining:         "True/SomeResourcesRemain/Some resources are remaining: configmaps has 1 resource instances, pods has 2 resource instances",
			corev1.NamespaceFinalizersRemaining:      "True/SomeFinalizersRemain/Some content in the namespace has finalizers remaining: x/hold has 1 resource instances",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := byType(conditions(tt.pass, tt.failures))
			if len(got) != len(tt.want) {
				t.Fatalf("got %d conditions, want %d", len(got), len(tt.want))
			}
			for typ, want := range tt.want {
				c := got[typ]
				if s := string(c.Status) + "/" + c.Reason + "/" + c.Message; s != want {
					t.Errorf("%s = %q, want %q", typ, s, want)
				}
			}
		})
	}
}

func TestMergeConditions(t *testing.T) {
	t.Parallel()
	t0 := metav1.NewTime(time.Unix(1000, 0))
	now := metav1.NewTime(time.Unix(2000, 0))
	other := corev1.NamespaceCondition{Type: "Other", Status: corev1.ConditionTrue, LastTransitionTime: t0}
	remaining := func(status corev1.ConditionStatus, msg string, at metav1.Time) corev1.NamespaceCondition {
		return corev1.NamespaceCondition{Type: corev1.NamespaceContentRemaining, Status: status, Reason: "R", Message: msg, LastTransitionTime: at}
	}
	tests := []struct {
		name        string
		old, set    []corev1.NamespaceCondition
		want        []corev1.NamespaceCondition
		wantChanged bool
	}{{
		name: "new condition gets now", old: []corev1.NamespaceCondition{other},
		set:  []corev1.NamespaceCondition{remaining(corev1.ConditionTrue, "m", metav1.Time{})},
		want: []corev1.NamespaceCondition{other, remaining(corev1.ConditionTrue, "m", now)}, wantChanged: true,
	}, {
		name: "unchanged keeps its time", old: []corev1.NamespaceCondition{remaining(corev1.ConditionTrue, "m", t0)},
		set:  []corev1.NamespaceCondition{remaining(corev1.ConditionTrue, "m", metav1.Time{})},
		want: []corev1.NamespaceCondition{remaining(corev1.ConditionTrue, "m", t0)},
	}, {
		name: "a new message with the same status keeps the time", old: []corev1.NamespaceCondition{remaining(corev1.ConditionTrue, "m", t0)},
		set:  []corev1.NamespaceCondition{remaining(corev1.ConditionTrue, "m2", metav1.Time{})},
		want: []corev1.NamespaceCondition{remaining(corev1.ConditionTrue, "m2", t0)}, wantChanged: true,
	}, {
		name: "a new status is a transition", old: []corev1.NamespaceCondition{remaining(corev1.ConditionTrue, "m", t0)},
		set:  []corev1.NamespaceCondition{remaining(corev1.ConditionFalse, "m", metav1.Time{})},
		want: []corev1.NamespaceCondition{remaining(corev1.ConditionFalse, "m", now)}, wantChanged: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, changed := mergeConditions(tt.old, tt.set, now)
			if changed != tt.wantChanged || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("mergeConditions = %+v, %v; want %+v, %v", got, changed, tt.want, tt.wantChanged)
			}
		})
	}
}

func TestWithoutFinalizer(t *testing.T) {
	t.Parallel()
	got := withoutFinalizer([]corev1.FinalizerName{"a", corev1.FinalizerKubernetes, "b"}, corev1.FinalizerKubernetes)
	if !reflect.DeepEqual(got, []corev1.FinalizerName{"a", "b"}) {
		t.Fatalf("withoutFinalizer = %v", got)
	}
	if got := withoutFinalizer([]corev1.FinalizerName{corev1.FinalizerKubernetes}, corev1.FinalizerKubernetes); got != nil {
		t.Fatalf("withoutFinalizer = %v, want nil", got)
	}
}

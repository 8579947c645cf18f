package claim

import (
	"context"
	"errors"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	web := owner("web", "web-uid")
	cached := map[string]*appsv1.ReplicaSet{"ns/web": web}
	get := func(namespace, name string) (*appsv1.ReplicaSet, bool) {
		rs, ok := cached[namespace+"/"+name]
		return rs, ok
	}
	tests := []struct {
		name      string
		ref       metav1.OwnerReference
		namespace string
		want      *appsv1.ReplicaSet
	}{
		{"this incarnation", metav1.OwnerReference{Kind: "ReplicaSet", Name: "web", UID: "web-uid"}, "ns", web},
		{"an earlier incarnation", metav1.OwnerReference{Kind: "ReplicaSet", Name: "web", UID: "old-uid"}, "ns", nil},
		{"another kind", metav1.OwnerReference{Kind: "DaemonSet", Name: "web", UID: "web-uid"}, "ns", nil},
		{"not cached", metav1.OwnerReference{Kind: "ReplicaSet", Name: "db", UID: "db-uid"}, "ns", nil},
		{"another namespace", metav1.OwnerReference{Kind: "ReplicaSet", Name: "web", UID: "web-uid"}, "other", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Resolve(&tt.ref, "ReplicaSet", tt.namespace, get); got != tt.want {
				t.Errorf("Resolve = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestControllerOf(t *testing.T) {
	t.Parallel()
	web := owner("web", "web-uid")
	get := func(namespace, name string) (*appsv1.ReplicaSet, bool) {
		return web, namespace == "ns" && name == "web"
	}
	nonController := pod("owned-not-controlled", "web")
	nonController.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: "web-uid"}}
	tests := []struct {
		name string
		obj  metav1.Object
		want *appsv1.ReplicaSet
	}{
		{"controlled", pod("p", "web", controlledBy(web)), web},
		{"orphan", pod("p", "web"), nil},
		{"owned, not controlled", nonController, nil},
		{"controlled by an earlier incarnation", pod("p", "web", controlledBy(owner("web", "old-uid"))), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ControllerOf(tt.obj, "ReplicaSet", get); got != tt.want {
				t.Errorf("ControllerOf = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSelecting(t *testing.T) {
	t.Parallel()
	mk := func(name string, sel *metav1.LabelSelector) *appsv1.ReplicaSet {
		rs := owner(name, "")
		rs.Spec.Selector = sel
		return rs
	}
	owners := []*appsv1.ReplicaSet{
		mk("web", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}),
		mk("web-tier", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}}),
		mk("empty", &metav1.LabelSelector{}),
		mk("nil", nil),
		mk("invalid", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}),
		mk("db", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}),
	}
	selectorOf := func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector }
	tests := []struct {
		name   string
		labels map[string]string
		want   []string
	}{
		{"matching two", map[string]string{"app": "web", "tier": "front"}, []string{"web", "web-tier"}},
		{"matching one", map[string]string{"app": "db"}, []string{"db"}},
		{"no labels", nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := names(Selecting(owners, selectorOf, tt.labels)); !slices.Equal(got, tt.want) {
				t.Errorf("Selecting = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPatchOwners(t *testing.T) {
	t.Parallel()
	p := pod("p", "web")
	boom := errors.New("boom")
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")
	tests := []struct {
		name    string
		err     error
		wantErr error
	}{
		{"patched", nil, nil},
		{"gone: nothing to do", notFound, nil},
		{"failed", boom, boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var sent []byte
			err := PatchOwners(context.Background(), p, nil, func(_ context.Context, ns, name string, patch []byte) error {
				if ns != "ns" || name != "p" {
					t.Errorf("patched %s/%s", ns, name)
				}
				sent = patch
				return tt.err
			})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("PatchOwners = %v, want %v", err, tt.wantErr)
			}
			if want, _ := OwnerPatch(p, nil); string(sent) != string(want) {
				t.Errorf("sent %s, want %s", sent, want)
			}
		})
	}
}

package kcm

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/controllers/garbagecollector"
)

// crd is an Established CRD of widgets.example.com with the versions
// (name, served, storage).
func crd(scope apiextensionsv1.ResourceScope, versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Scope: scope, Versions: versions,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"}},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{
			AcceptedNames: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue},
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue},
			},
		},
	}
}

func version(name string, served, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
	return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: served, Storage: storage}
}

func widgets(version string, namespaced bool) garbagecollector.Resource {
	return garbagecollector.Resource{Group: "example.com", Version: version, Resource: "widgets", Kind: "Widget", Namespaced: namespaced}
}

func TestCRDResource(t *testing.T) {
	t.Parallel()
	notEstablished := crd(apiextensionsv1.NamespaceScoped, version("v1", true, true))
	notEstablished.Status.Conditions[1].Status = apiextensionsv1.ConditionFalse
	noConditions := crd(apiextensionsv1.NamespaceScoped, version("v1", true, true))
	noConditions.Status.Conditions = nil
	noNames := crd(apiextensionsv1.NamespaceScoped, version("v1", true, true))
	noNames.Status.AcceptedNames = apiextensionsv1.CustomResourceDefinitionNames{}
	otherNames := crd(apiextensionsv1.NamespaceScoped, version("v1", true, true))
	otherNames.Status.AcceptedNames = apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Kind: "Gizmo"}
	tests := []struct {
		name   string
		crd    *apiextensionsv1.CustomResourceDefinition
		want   garbagecollector.Resource
		wantOK bool
	}{
		{"namespaced", crd(apiextensionsv1.NamespaceScoped, version("v1", true, true)), widgets("v1", true), true},
		{"cluster-scoped", crd(apiextensionsv1.ClusterScoped, version("v1", true, true)), widgets("v1", false), true},
		{"the storage version", crd(apiextensionsv1.NamespaceScoped, version("v1", true, false), version("v2", true, true), version("v3", true, false)),
			widgets("v2", true), true},
		{"the first served version when storage is not served", crd(apiextensionsv1.NamespaceScoped,
			version("v1", false, true), version("v2", true, false), version("v3", true, false)), widgets("v2", true), true},
		{"no version served", crd(apiextensionsv1.NamespaceScoped, version("v1", false, true)), garbagecollector.Resource{}, false},
		{"not established", notEstablished, garbagecollector.Resource{}, false},
		{"no conditions", noConditions, garbagecollector.Resource{}, false},
		{"no accepted names", noNames, garbagecollector.Resource{}, false},
		{"the accepted names", otherNames, garbagecollector.Resource{Group: "example.com", Version: "v1", Resource: "gizmos", Kind: "Gizmo", Namespaced: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := crdResource(tt.crd)
			if ok != tt.wantOK || got != tt.want {
				t.Fatalf("crdResource = %+v, %v; want %+v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// recordingSink records the calls it gets; adding fail fails.
type recordingSink struct {
	calls []string
	fail  garbagecollector.Resource
}

func (s *recordingSink) AddResource(r garbagecollector.Resource) error {
	if r == s.fail {
		return errors.New("refused")
	}
	s.calls = append(s.calls, fmt.Sprintf("add %s/%s", r, r.Version))
	return nil
}

func (s *recordingSink) RemoveResource(r garbagecollector.Resource) {
	s.calls = append(s.calls, fmt.Sprintf("remove %s/%s", r, r.Version))
}

func TestCRDFollower(t *testing.T) {
	t.Parallel()
	v1 := crd(apiextensionsv1.NamespaceScoped, version("v1", true, true))
	v2 := crd(apiextensionsv1.NamespaceScoped, version("v1", true, false), version("v2", true, true))
	pending := crd(apiextensionsv1.NamespaceScoped, version("v1", true, true))
	pending.Status.Conditions = pending.Status.Conditions[:1]
	deleting := v1.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}
	const gone = "gone"
	type event struct {
		crd  *apiextensionsv1.CustomResourceDefinition // nil: deleted
		name string
	}
	tests := []struct {
		name   string
		events []event
		fail   garbagecollector.Resource
		want   []string
	}{
		{name: "established", events: []event{{crd: v1}}, want: []string{"add widgets.example.com/v1"}},
		{name: "once established", events: []event{{crd: pending}, {crd: v1}, {crd: v1}}, want: []string{"add widgets.example.com/v1"}},
		{name: "being deleted: still served", events: []event{{crd: v1}, {crd: deleting}}, want: []string{"add widgets.example.com/v1"}},
		{name: "deleted", events: []event{{crd: v1}, {name: gone}}, want: []string{"add widgets.example.com/v1", "remove widgets.example.com/v1"}},
		{name: "deleted before established", events: []event{{crd: pending}, {name: gone}}},
		{name: "a new storage version", events: []event{{crd: v1}, {crd: v2}},
			want: []string{"add widgets.example.com/v1", "remove widgets.example.com/v1", "add widgets.example.com/v2"}},
		{name: "no longer established", events: []event{{crd: v1}, {crd: pending}}, want: []string{"add widgets.example.com/v1", "remove widgets.example.com/v1"}},
		{name: "refused, then tried again on the next change", events: []event{{crd: v1}, {crd: v1}, {name: gone}}, fail: widgets("v1", true)},
		{name: "refused, then another version", events: []event{{crd: v1}, {crd: v2}, {name: gone}}, fail: widgets("v1", true),
			want: []string{"add widgets.example.com/v2", "remove widgets.example.com/v2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sink := &recordingSink{fail: tt.fail}
			f := newCRDFollower(sink, slog.New(slog.DiscardHandler))
			for _, e := range tt.events {
				if e.crd == nil {
					f.sync(v1.Name, nil)
					continue
				}
				f.sync(e.crd.Name, e.crd)
			}
			if !slices.Equal(sink.calls, tt.want) {
				t.Fatalf("calls %q, want %q", sink.calls, tt.want)
			}
		})
	}
}

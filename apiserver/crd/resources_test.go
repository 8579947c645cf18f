package crd

import (
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubebus/kubebus/apiserver/resource"
)

// rows returns the test CRD's rows by version.
func rows(t *testing.T) map[string]*resource.Resource {
	t.Helper()
	rs, err := Resources(cronTab(t))
	if err != nil {
		t.Fatalf("Resources: %v", err)
	}
	out := map[string]*resource.Resource{}
	for _, r := range rs {
		out[r.GVK.Version] = r
	}
	return out
}

const goodCronTab = `
apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: my-cron
  namespace: default
  resourceVersion: "5"
spec:
  cronSpec: "* * * * */5"
  image: my-image
  replicas: 3
  immutable: fixed
`

func TestResourcesRows(t *testing.T) {
	rs, err := Resources(cronTab(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("got %d rows, want 2", len(rs))
	}
	tests := []struct {
		version string
		subs    []resource.Subresource
		scale   bool
	}{
		{version: "v1", subs: []resource.Subresource{resource.Status, resource.Scale}, scale: true},
		{version: "v1beta1", subs: []resource.Subresource{resource.Status}},
	}
	for i, tt := range tests {
		r := rs[i]
		want := schema.GroupVersionKind{Group: "stable.example.com", Version: tt.version, Kind: "CronTab"}
		if r.GVK != want {
			t.Errorf("row %d GVK = %v, want %v", i, r.GVK, want)
		}
		if r.Plural != "crontabs" || r.Singular != "crontab" || !r.Namespaced || !r.HasGeneration ||
			!slices.Equal(r.ShortNames, []string{"ct"}) || !slices.Equal(r.Categories, []string{"all"}) {
			t.Errorf("%s: names/scope wrong: %+v", tt.version, r)
		}
		if !slices.Equal(r.Subresources, tt.subs) {
			t.Errorf("%s: subresources = %v, want %v", tt.version, r.Subresources, tt.subs)
		}
		if (r.Scale != nil) != tt.scale {
			t.Errorf("%s: scale = %v", tt.version, r.Scale)
		}
		if !slices.Equal(r.Versions, []string{"v1", "v1beta1"}) {
			t.Errorf("%s: versions = %v", tt.version, r.Versions)
		}
		if r.TypeConverter == nil {
			t.Errorf("%s: no type converter", tt.version)
		}
		obj := r.New().(*unstructured.Unstructured)
		list := r.NewList().(*unstructured.UnstructuredList)
		if obj.GetAPIVersion() != "stable.example.com/"+tt.version || obj.GetKind() != "CronTab" || list.GetKind() != "CronTabList" {
			t.Errorf("%s: New/NewList = %v %v", tt.version, obj.Object, list.Object)
		}
	}
}

func TestResourcesAcceptedNames(t *testing.T) {
	c := cronTab(t)
	c.Status.AcceptedNames = apiextensionsv1.CustomResourceDefinitionNames{Plural: "crontabs", Singular: "crontab", Kind: "CronTab", ListKind: "CronTabList"}
	rs, err := Resources(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs[0].ShortNames) != 0 || len(rs[0].Categories) != 0 {
		t.Fatalf("names not from status.acceptedNames: %v %v", rs[0].ShortNames, rs[0].Categories)
	}
}

func TestPruneAndDefault(t *testing.T) {
	r := rows(t)["v1"]
	obj := cr(t, `
apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: my-cron
  namespace: default
  bogus: 1
spec:
  cronSpec: "* * * * */5"
  extra: dropped
  nested: {}
status:
  replicas: 1
  other: x
`)
	paths := r.Prune(obj)
	want := []string{"metadata.bogus", "spec.extra", "status.other"}
	slices.Sort(paths)
	if !slices.Equal(paths, want) {
		t.Fatalf("pruned %v, want %v", paths, want)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "extra"); found {
		t.Fatal("spec.extra kept")
	}
	if obj.GetName() != "my-cron" || obj.GetAPIVersion() != "stable.example.com/v1" || obj.GetKind() != "CronTab" {
		t.Fatalf("type or object meta lost: %v", obj.Object)
	}
	r.Default(obj)
	if n, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas"); n != 1 {
		t.Fatalf("spec.replicas = %d, want 1", n)
	}
	if m, _, _ := unstructured.NestedString(obj.Object, "spec", "nested", "object", "mode"); m != "auto" {
		t.Fatalf("spec.nested.object.mode = %q, want auto", m)
	}
}

func errorsAt(errs field.ErrorList) map[string]string {
	out := map[string]string{}
	for _, e := range errs {
		out[e.Field] = e.Error()
	}
	return out
}

func TestValidate(t *testing.T) {
	r := rows(t)["v1"]
	tests := []struct {
		name   string
		mutate func(u *unstructured.Unstructured)
		want   map[string]string // field path -> substring of its error
	}{
		{name: "valid", mutate: func(*unstructured.Unstructured) {}},
		{name: "pattern", mutate: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "not a cron", "spec", "cronSpec")
		}, want: map[string]string{"spec.cronSpec": "should match"}},
		{name: "CEL rule", mutate: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(11), "spec", "replicas")
		}, want: map[string]string{"spec": "replicas must be at most 10"}},
		{name: "minimum", mutate: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(0), "spec", "replicas")
		}, want: map[string]string{"spec.replicas": "greater than or equal to 1"}},
		{name: "bad name", mutate: func(u *unstructured.Unstructured) { u.SetName("Bad_Name") },
			want: map[string]string{"metadata.name": "Invalid value"}},
		{name: "no namespace", mutate: func(u *unstructured.Unstructured) { u.SetNamespace("") },
			want: map[string]string{"metadata.namespace": "Required"}},
		{name: "type", mutate: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "three", "spec", "replicas")
		}, want: map[string]string{"spec.replicas": "must be of type integer"}},
		{name: "duplicate map-list keys", mutate: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "a"}, map[string]any{"name": "a"}}, "spec", "ports")
		}, want: map[string]string{"spec.ports[1]": "Duplicate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := cr(t, goodCronTab)
			tt.mutate(obj)
			got := errorsAt(r.Validate(obj))
			if (len(got) == 0) != (len(tt.want) == 0) {
				t.Fatalf("errors %v, want paths %v", got, tt.want)
			}
			for path, sub := range tt.want {
				if !strings.Contains(got[path], sub) {
					t.Errorf("error at %s = %q, want it to contain %q (all: %v)", path, got[path], sub, got)
				}
			}
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	r := rows(t)["v1"]
	old := cr(t, goodCronTab)
	tests := []struct {
		name   string
		sub    string
		mutate func(u *unstructured.Unstructured)
		want   string // a field path with an error; "" for none
	}{
		{name: "change image", mutate: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "other", "spec", "image")
		}},
		{name: "change immutable", mutate: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "changed", "spec", "immutable")
		}, want: "spec.immutable"},
		{name: "rename", mutate: func(u *unstructured.Unstructured) { u.SetName("other") }, want: "metadata.name"},
		{name: "status ok", sub: "status", mutate: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(2), "status", "replicas")
		}},
		{name: "status bad type", sub: "status", mutate: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "two", "status", "replicas")
		}, want: "status.replicas"},
		{name: "scale too many", sub: "scale", mutate: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(-1), "spec", "replicas")
		}, want: ".spec.replicas"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := old.DeepCopy()
			tt.mutate(obj)
			var errs field.ErrorList
			if tt.sub == "" {
				errs = r.ValidateUpdate(obj, old)
			} else {
				errs = r.ValidateSubresource(obj, old, tt.sub)
			}
			got := errorsAt(errs)
			if tt.want == "" && len(got) > 0 {
				t.Fatalf("unexpected errors %v", got)
			}
			if _, ok := got[tt.want]; tt.want != "" && !ok {
				t.Fatalf("errors %v, want one at %s", got, tt.want)
			}
		})
	}
}

func TestPrepare(t *testing.T) {
	r := rows(t)["v1"]
	obj := cr(t, goodCronTab+"status: {replicas: 4}\n")
	r.PrepareForCreate(obj)
	if _, ok := obj.Object["status"]; ok {
		t.Fatal("status kept on create")
	}
	old := cr(t, goodCronTab+"status: {replicas: 4}\n")
	obj = cr(t, goodCronTab+"status: {replicas: 9}\n")
	r.PrepareForUpdate(obj, old)
	if n, _, _ := unstructured.NestedInt64(obj.Object, "status", "replicas"); n != 4 {
		t.Fatalf("status.replicas = %d, want the old 4", n)
	}
}

func TestCells(t *testing.T) {
	r := rows(t)["v1"]
	var names []string
	for _, c := range r.Columns {
		names = append(names, c.Name+":"+c.Type)
	}
	if want := []string{"Name:string", "Spec:string", "Replicas:integer", "Age:date"}; !slices.Equal(names, want) {
		t.Fatalf("columns %v, want %v", names, want)
	}
	obj := cr(t, goodCronTab)
	obj.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	now := time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)
	cells, err := r.Cells(obj, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"my-cron", "* * * * */5", int64(3), "5m"}
	if !slices.Equal(cells, want) {
		t.Fatalf("cells %#v, want %#v", cells, want)
	}
	// A version without columns prints NAME and AGE.
	beta := rows(t)["v1beta1"]
	if len(beta.Columns) != 2 || beta.Columns[1].Name != "Age" {
		t.Fatalf("v1beta1 columns %v", beta.Columns)
	}
}

func TestScale(t *testing.T) {
	r := rows(t)["v1"]
	obj := cr(t, goodCronTab+"status: {replicas: 2, selector: \"app=cron\"}\n")
	spec, status, sel := r.Scale.Get(obj)
	if spec != 3 || status != 2 || sel != "app=cron" {
		t.Fatalf("Get = %d %d %q", spec, status, sel)
	}
	r.Scale.Set(obj, 7)
	if spec, _, _ := r.Scale.Get(obj); spec != 7 {
		t.Fatalf("after Set spec = %d", spec)
	}
	empty := r.New()
	if spec, status, sel := r.Scale.Get(empty); spec != 0 || status != 0 || sel != "" {
		t.Fatalf("empty Get = %d %d %q", spec, status, sel)
	}
}

func TestTypeConverter(t *testing.T) {
	r := rows(t)["v1"]
	obj := cr(t, goodCronTab)
	_ = unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"name": "http", "port": int64(80)}}, "spec", "ports")
	tv, err := r.TypeConverter.ObjectToTyped(obj)
	if err != nil {
		t.Fatalf("ObjectToTyped: %v", err)
	}
	set, err := tv.ToFieldSet()
	if err != nil {
		t.Fatal(err)
	}
	// The map-list is keyed by name, so its element path carries the key.
	if s := set.String(); !strings.Contains(s, `.spec.ports[name="http"]`) {
		t.Fatalf("field set does not key ports by name:\n%s", s)
	}
}

func TestResourcesClusterScopedPreserveUnknown(t *testing.T) {
	c := cronTab(t)
	c.Spec.Scope = apiextensionsv1.ClusterScoped
	c.Spec.Versions = c.Spec.Versions[:1]
	c.Spec.Versions[0].Subresources = nil
	c.Spec.Versions[0].AdditionalPrinterColumns = nil
	preserve := true
	c.Spec.Versions[0].Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", XPreserveUnknownFields: &preserve,
	}}
	rs, err := Resources(c)
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	if r.Namespaced || len(r.Subresources) != 0 || r.Scale != nil {
		t.Fatalf("row %+v", r)
	}
	obj := cr(t, "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: a}\nspec: {anything: 1}\n")
	if paths := r.Prune(obj); len(paths) != 0 {
		t.Fatalf("pruned %v under x-kubernetes-preserve-unknown-fields", paths)
	}
	if errs := r.Validate(obj); len(errs) != 0 {
		t.Fatalf("cluster-scoped object without namespace: %v", errs)
	}
	obj.SetNamespace("default")
	if errs := errorsAt(r.Validate(obj)); errs["metadata.namespace"] == "" {
		t.Fatalf("namespace on a cluster-scoped object accepted: %v", errs)
	}
}

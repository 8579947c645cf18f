package openapi

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type leaf struct {
	Name string `json:"name"`
}

func (leaf) SwaggerDoc() map[string]string {
	return map[string]string{"": "A leaf.", "name": "Name of the leaf."}
}

type inner struct {
	Inline string `json:"inline,omitempty"`
	Shadow string `json:"shadow,omitempty"`
}

// sample exercises the encoding/json rules the reflection follows. It
// embeds TypeMeta, whose SwaggerDoc and OpenAPIModelName must not leak.
type sample struct {
	metav1.TypeMeta `json:",inline"`
	inner
	Shadow int32   `json:"shadow"`
	Plain  string  `json:"plain"`
	Opt    *string `json:"opt,omitempty"`
	Ptr    *int64  `json:"ptr"`
	Skip   string  `json:"-"`
	//lint:ignore U1000 unexported fields are not encoded: the test checks that.
	hidden string
	Bytes  []byte                       `json:"bytes,omitempty"`
	Labels map[string]string            `json:"labels,omitempty"`
	Leaves []leaf                       `json:"leaves,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
	Self   *sample                      `json:"self,omitempty"`
	When   metav1.Time                  `json:"when,omitempty"`
	Qty    map[string]resource.Quantity `json:"qty,omitempty"`
	Port   intstr.IntOrString           `json:"port,omitempty"`
	Raw    runtime.RawExtension         `json:"raw,omitempty"`
	Dur    metav1.Duration              `json:"dur,omitempty"`
	Fields *metav1.FieldsV1             `json:"fields,omitempty"`
	Any    any                          `json:"any,omitempty"`
	Anon   struct {
		X bool `json:"x"`
	} `json:"anon,omitzero"`
	Ratio float64 `json:"ratio,omitempty"`
	NoTag uint8
	Leaf  leaf `json:"leaf" patchStrategy:"retainKeys"`
}

const sampleName = "com.github.kubebus.kubebus.apiserver.openapi.sample"

func sampleRegistry(t *testing.T) *registry {
	t.Helper()
	reg := newRegistry()
	if got := reg.define(reflect.TypeFor[sample]()); got != sampleName {
		t.Fatalf("definition name = %q, want %q", got, sampleName)
	}
	if err := reg.err(); err != nil {
		t.Fatal(err)
	}
	return reg
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFieldSchemas(t *testing.T) {
	t.Parallel()
	reg := sampleRegistry(t)
	s := reg.defs[sampleName]
	leafRef := "com.github.kubebus.kubebus.apiserver.openapi.leaf"
	tests := []struct {
		field  string
		v2, v3 string
	}{
		{"apiVersion", `{"description":"APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources","type":"string"}`, ""},
		{"inline", `{"type":"string"}`, ""},
		{"shadow", `{"format":"int32","type":"integer"}`, ""},
		{"plain", `{"type":"string"}`, ""},
		{"opt", `{"type":"string"}`, ""},
		{"ptr", `{"format":"int64","type":"integer"}`, ""},
		{"bytes", `{"format":"byte","type":"string"}`, ""},
		{"labels", `{"additionalProperties":{"type":"string"},"type":"object"}`, ""},
		{"leaves",
			`{"items":{"$ref":"#/definitions/` + leafRef + `"},"type":"array","x-kubernetes-patch-merge-key":"name","x-kubernetes-patch-strategy":"merge"}`,
			`{"items":{"$ref":"#/components/schemas/` + leafRef + `"},"type":"array","x-kubernetes-patch-merge-key":"name","x-kubernetes-patch-strategy":"merge"}`},
		{"self", `{"$ref":"#/definitions/` + sampleName + `"}`, `{"$ref":"#/components/schemas/` + sampleName + `"}`},
		{"when", `{"$ref":"#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Time"}`, `{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"}`},
		{"qty",
			`{"additionalProperties":{"$ref":"#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity"},"type":"object"}`,
			`{"additionalProperties":{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"},"type":"object"}`},
		{"any", `{}`, `{}`},
		{"anon", `{"properties":{"x":{"type":"boolean"}},"required":["x"],"type":"object"}`, ""},
		{"ratio", `{"format":"double","type":"number"}`, ""},
		{"NoTag", `{"format":"int32","type":"integer"}`, ""},
		{"leaf",
			`{"$ref":"#/definitions/` + leafRef + `","x-kubernetes-patch-strategy":"retainKeys"}`,
			`{"allOf":[{"$ref":"#/components/schemas/` + leafRef + `"}],"x-kubernetes-patch-strategy":"retainKeys"}`},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			t.Parallel()
			f, ok := s.Properties[tt.field]
			if !ok {
				t.Fatalf("no property %q; have %v", tt.field, keys(s.Properties))
			}
			if got := jsonOf(t, v2Schema(f)); got != tt.v2 {
				t.Errorf("v2 = %s\nwant %s", got, tt.v2)
			}
			want := tt.v3
			if want == "" {
				want = tt.v2
			}
			if got := jsonOf(t, v3Schema(f)); got != want {
				t.Errorf("v3 = %s\nwant %s", got, want)
			}
		})
	}
}

func TestStructRules(t *testing.T) {
	t.Parallel()
	reg := sampleRegistry(t)
	s := reg.defs[sampleName]
	for _, absent := range []string{"Skip", "-", "hidden", "inner", "TypeMeta"} {
		if _, ok := s.Properties[absent]; ok {
			t.Errorf("property %q should not exist", absent)
		}
	}
	wantRequired := []string{"shadow", "plain", "ptr", "NoTag", "leaf"}
	if !slices.Equal(s.Required, wantRequired) {
		t.Errorf("required = %v, want %v", s.Required, wantRequired)
	}
	if s.Description != "" {
		t.Errorf("description %q leaked from the embedded TypeMeta", s.Description)
	}
	leaf := reg.defs["com.github.kubebus.kubebus.apiserver.openapi.leaf"]
	if leaf.Description != "A leaf." || leaf.Properties["name"].Description != "Name of the leaf." {
		t.Errorf("SwaggerDoc not applied: %+v", leaf)
	}
}

// TestSpecialDefinitions checks the types whose JSON form is not their Go
// structure.
func TestSpecialDefinitions(t *testing.T) {
	t.Parallel()
	reg := sampleRegistry(t)
	tests := []struct {
		name   string
		v2, v3 string // without description
	}{
		{"io.k8s.apimachinery.pkg.apis.meta.v1.Time", `{"format":"date-time","type":"string"}`, ""},
		{"io.k8s.apimachinery.pkg.apis.meta.v1.Duration", `{"type":"string"}`, ""},
		{"io.k8s.apimachinery.pkg.api.resource.Quantity", `{"type":"string"}`, `{"oneOf":[{"type":"string"},{"type":"number"}]}`},
		{"io.k8s.apimachinery.pkg.util.intstr.IntOrString",
			`{"format":"int-or-string","type":"string"}`,
			`{"format":"int-or-string","oneOf":[{"type":"integer"},{"type":"string"}],"x-kubernetes-int-or-string":true}`},
		{"io.k8s.apimachinery.pkg.runtime.RawExtension", `{"type":"object"}`, ""},
		{"io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1", `{"type":"object"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, ok := reg.defs[tt.name]
			if !ok {
				t.Fatalf("no definition %q", tt.name)
			}
			c := *s
			c.Description = ""
			if got := jsonOf(t, v2Schema(&c)); got != tt.v2 {
				t.Errorf("v2 = %s, want %s", got, tt.v2)
			}
			want := tt.v3
			if want == "" {
				want = tt.v2
			}
			if got := jsonOf(t, v3Schema(&c)); got != want {
				t.Errorf("v3 = %s, want %s", got, want)
			}
		})
	}
}

func TestModelName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[appsv1.Deployment](), "io.k8s.api.apps.v1.Deployment"},
		{reflect.TypeFor[corev1.PodSpec](), "io.k8s.api.core.v1.PodSpec"},
		{reflect.TypeFor[metav1.ObjectMeta](), "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
		{reflect.TypeFor[resource.Quantity](), "io.k8s.apimachinery.pkg.api.resource.Quantity"},
		{reflect.TypeFor[intstr.IntOrString](), "io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
		{reflect.TypeFor[runtime.RawExtension](), "io.k8s.apimachinery.pkg.runtime.RawExtension"},
		{reflect.TypeFor[sample](), sampleName},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			if got := modelName(tt.typ); got != tt.want {
				t.Errorf("modelName(%s) = %q, want %q", tt.typ, got, tt.want)
			}
		})
	}
}

// badKind has a field encoding/json cannot encode.
type badKind struct {
	metav1.TypeMeta `json:",inline"`
	C               chan int `json:"c"`
}

func (b *badKind) DeepCopyObject() runtime.Object { return b }

func TestBuildRejects(t *testing.T) {
	t.Parallel()
	ok := testResources()[3] // configmaps
	tests := []struct {
		name string
		edit func(r *Resource) []Resource
	}{
		{"empty plural", func(r *Resource) []Resource { r.Plural = ""; return []Resource{*r} }},
		{"no kind", func(r *Resource) []Resource { r.GVK.Kind = ""; return []Resource{*r} }},
		{"nil object", func(r *Resource) []Resource { r.Object = nil; return []Resource{*r} }},
		{"nil list", func(r *Resource) []Resource { r.List = nil; return []Resource{*r} }},
		{"listed twice", func(r *Resource) []Resource { return []Resource{*r, *r} }},
		{"bad subresource", func(r *Resource) []Resource { r.Subresources = []string{"a/b"}; return []Resource{*r} }},
		{"unencodable field", func(r *Resource) []Resource { r.Object = &badKind{}; return []Resource{*r} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := ok
			_, err := Build(tt.edit(&r))
			if err == nil {
				t.Fatal("Build succeeded")
			}
			if tt.name != "unencodable field" && !errors.Is(err, errInvalidResource) {
				t.Errorf("error %v does not wrap errInvalidResource", err)
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

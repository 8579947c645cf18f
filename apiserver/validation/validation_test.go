package validation

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubebus/kubebus/apiserver/defaults"
)

// want is an expected error: its type and field path.
type want struct {
	typ  field.ErrorType
	path string
}

func (w want) String() string { return fmt.Sprintf("%s %s", w.path, w.typ) }

func required(path string) want     { return want{field.ErrorTypeRequired, path} }
func invalid(path string) want      { return want{field.ErrorTypeInvalid, path} }
func notSupported(path string) want { return want{field.ErrorTypeNotSupported, path} }
func duplicate(path string) want    { return want{field.ErrorTypeDuplicate, path} }
func forbidden(path string) want    { return want{field.ErrorTypeForbidden, path} }
func notFound(path string) want     { return want{field.ErrorTypeNotFound, path} }
func tooLong(path string) want      { return want{field.ErrorTypeTooLong, path} }
func tooMany(path string) want      { return want{field.ErrorTypeTooMany, path} }

// expectErrors fails unless errs are exactly the wanted errors, in any order.
func expectErrors(t *testing.T, errs field.ErrorList, wants ...want) {
	t.Helper()
	var got []want
	for _, e := range errs {
		got = append(got, want{e.Type, e.Field})
	}
	key := func(w want) string { return w.String() }
	gotKeys, wantKeys := make([]string, len(got)), make([]string, len(wants))
	for i, w := range got {
		gotKeys[i] = key(w)
	}
	for i, w := range wants {
		wantKeys[i] = key(w)
	}
	slices.Sort(gotKeys)
	slices.Sort(wantKeys)
	if !slices.Equal(gotKeys, wantKeys) {
		t.Fatalf("errors:\n  got  %v\n  want %v\nfull errors:\n%s", gotKeys, wantKeys, describe(errs))
	}
}

// expectDetail fails unless some error at path has a detail containing s.
func expectDetail(t *testing.T, errs field.ErrorList, path, s string) {
	t.Helper()
	for _, e := range errs {
		if e.Field == path && strings.Contains(e.Detail, s) {
			return
		}
	}
	t.Fatalf("no error at %s with detail %q in:\n%s", path, s, describe(errs))
}

func describe(errs field.ErrorList) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  %s\n", e.Error())
	}
	return b.String()
}

// defaulted defaults obj the way the server does before validating it.
func defaulted[T runtime.Object](obj T) T {
	defaults.Default(obj)
	return obj
}

func TestMetadata(t *testing.T) {
	t.Parallel()
	meta := func(name, ns string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns} }
	tests := []struct {
		name  string
		obj   runtime.Object
		wants []want
	}{
		{"namespace name is a DNS label", &corev1.Namespace{ObjectMeta: meta("a.b", "")}, []want{invalid("metadata.name")}},
		{"namespace is cluster-scoped", &corev1.Namespace{ObjectMeta: meta("a", "x")}, []want{forbidden("metadata.namespace")}},
		{"service name is a DNS-1035 label", defaulted(&corev1.Service{ObjectMeta: meta("1web", "default"), Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Port: 80}},
		}}), []want{invalid("metadata.name")}},
		{"configmap name may be a subdomain", &corev1.ConfigMap{ObjectMeta: meta("a.b", "default")}, nil},
		{"configmap name", &corev1.ConfigMap{ObjectMeta: meta("A_b", "default")}, []want{invalid("metadata.name")}},
		{"configmap needs a namespace", &corev1.ConfigMap{ObjectMeta: meta("a", "")}, []want{required("metadata.namespace")}},
		{"name required", &corev1.Secret{ObjectMeta: meta("", "default")}, []want{required("metadata.name")}},
		{"service account", &corev1.ServiceAccount{ObjectMeta: meta("builder", "")}, []want{required("metadata.namespace")}},
		{"node is cluster-scoped", &corev1.Node{ObjectMeta: meta("n1.example.com", "default")}, []want{forbidden("metadata.namespace")}},
		{"priority class is cluster-scoped", &schedulingv1.PriorityClass{ObjectMeta: meta("high", "default")}, []want{forbidden("metadata.namespace")}},
		{"lease name", &coordinationv1.Lease{ObjectMeta: meta("kube_lease", "kube-node-lease")}, []want{invalid("metadata.name")}},
		{"endpoints namespace must be a label", &corev1.Endpoints{ObjectMeta: meta("web", "Bad")}, []want{invalid("metadata.namespace")}},
		{"endpointslice", &discoveryv1.EndpointSlice{ObjectMeta: meta("web-x", "default"), AddressType: discoveryv1.AddressTypeIPv4}, nil},
		{
			"labels and annotations",
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: "a", Namespace: "default",
				Labels:      map[string]string{"app": "bad value"},
				Annotations: map[string]string{"bad key!": "x"},
			}},
			[]want{invalid("metadata.labels"), invalid("metadata.annotations")},
		},
		{
			"finalizers need a domain unless standard",
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: "a", Namespace: "default",
				Finalizers: []string{"kubernetes", "foregroundDeletion", "example.com/cleanup", "cleanup"},
			}},
			[]want{invalid("metadata.finalizers[3]")},
		},
		{"unknown kinds are accepted", &corev1.ComponentStatus{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			expectErrors(t, ValidateCreate(tt.obj), tt.wants...)
		})
	}
}

func TestMetadataUpdate(t *testing.T) {
	t.Parallel()
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default", ResourceVersion: "5", UID: "u1"}}
	tests := []struct {
		name   string
		change func(*corev1.ConfigMap)
		wants  []want
	}{
		{"no change", func(*corev1.ConfigMap) {}, nil},
		{"name is immutable", func(c *corev1.ConfigMap) { c.Name = "b" }, []want{invalid("metadata.name")}},
		{"uid is immutable", func(c *corev1.ConfigMap) { c.UID = "u2" }, []want{invalid("metadata.uid")}},
		{"resourceVersion is required", func(c *corev1.ConfigMap) { c.ResourceVersion = "" }, []want{invalid("metadata.resourceVersion")}},
		{"a bad label is reported once", func(c *corev1.ConfigMap) { c.Labels = map[string]string{"a": "b c"} }, []want{invalid("metadata.labels")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			obj := old.DeepCopy()
			tt.change(obj)
			expectErrors(t, ValidateUpdate(obj, old), tt.wants...)
		})
	}

	t.Run("kinds must match", func(t *testing.T) {
		t.Parallel()
		errs := ValidateUpdate(old, &corev1.Secret{})
		if len(errs) != 1 || errs[0].Type != field.ErrorTypeInternal {
			t.Fatalf("got %v, want one internal error", errs)
		}
	})
}

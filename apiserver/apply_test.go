package apiserver

import (
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/apiserver/resource"
)

func TestParseApplyOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		query   string
		want    applyOptions
		wantErr string
	}{
		{query: "fieldManager=kubectl", want: applyOptions{manager: "kubectl"}},
		{query: "fieldManager=kubectl&force=true", want: applyOptions{manager: "kubectl", force: true}},
		{query: "", wantErr: "fieldManager: Required value: is required for apply patch"},
		{query: "force=true", wantErr: "fieldManager: Required value"},
		{query: "fieldManager=kubectl&dryRun=Some", wantErr: "dryRun"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			r := httptest.NewRequest("PATCH", "/api/v1/namespaces/default/configmaps/c?"+tc.query, nil)
			got, err := parseApplyOptions(r, types.ApplyYAMLPatchType)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestIsNotFoundOf(t *testing.T) {
	t.Parallel()
	res := &resource.Resource{Plural: "configmaps"}
	if !isNotFoundOf(apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "c"), res, "c") {
		t.Error("the object's 404 is not recognised")
	}
	if isNotFoundOf(apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "default"), res, "c") {
		t.Error("the namespace's 404 is taken for the object's")
	}
}

func TestLastWriter(t *testing.T) {
	t.Parallel()
	m := &metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "a", Operation: metav1.ManagedFieldsOperationApply},
		{Manager: "w", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"},
		{Manager: "w", Operation: metav1.ManagedFieldsOperationUpdate},
		{Manager: "z", Operation: metav1.ManagedFieldsOperationUpdate},
	}}
	lastWriter(m, "w", metav1.ManagedFieldsOperationUpdate, "status")
	var got []string
	for _, e := range m.ManagedFields {
		got = append(got, e.Manager+"/"+e.Subresource)
	}
	if want := "a/ w/ z/ w/status"; strings.Join(got, " ") != want {
		t.Fatalf("order %q, want %q", strings.Join(got, " "), want)
	}
}

package apiserver

import (
	"context"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebus/kubebus/apiserver/resource"
)

type managerKey struct{}

// managerOf names the writer of a request as upstream does: the
// fieldManager parameter, else the user agent's program name.
func managerOf(r *http.Request) string {
	if m := r.URL.Query().Get("fieldManager"); m != "" {
		return m
	}
	ua := r.Header.Get("User-Agent")
	if i := strings.IndexByte(ua, '/'); i >= 0 {
		ua = ua[:i]
	}
	if ua == "" {
		return "unknown"
	}
	if len(ua) > 128 {
		ua = ua[:128]
	}
	return ua
}

func withManager(ctx context.Context, m string) context.Context {
	return context.WithValue(ctx, managerKey{}, m)
}

// recordManager notes in metadata.managedFields that the request's manager
// wrote obj now (one entry per manager, operation and subresource). Field
// sets are not tracked; the entries say who last wrote and when, which is
// what `kubebus tap` shows as WHO.
func recordManager(ctx context.Context, res *resource.Resource, obj, old runtime.Object, sub string) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	manager, _ := ctx.Value(managerKey{}).(string)
	if manager == "" {
		return
	}
	var entries []metav1.ManagedFieldsEntry
	if old != nil {
		if om, err := meta.Accessor(old); err == nil {
			entries = om.GetManagedFields()
		}
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	entry := metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate,
		APIVersion: res.GVK.GroupVersion().String(), Time: &now, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte("{}")}, Subresource: sub}
	out := make([]metav1.ManagedFieldsEntry, 0, len(entries)+1)
	for _, e := range entries {
		if e.Manager == manager && e.Operation == entry.Operation && e.Subresource == sub {
			continue
		}
		out = append(out, e)
	}
	m.SetManagedFields(append(out, entry))
}

package apiserver

import (
	"context"
	"net/http"
	"strings"

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

// appliedKey carries an *appliedFields through a server-side apply.
type appliedKey struct{}

// appliedFields are the managedFields an apply computed: the write that
// stores the applied object records them instead of tracking an update.
type appliedFields struct {
	manager string
	entries []metav1.ManagedFieldsEntry
}

func withApplied(ctx context.Context, a *appliedFields) context.Context {
	return context.WithValue(ctx, appliedKey{}, a)
}

// recordManager records in metadata.managedFields the fields the
// request's manager set: the entries a server-side apply computed, else
// upstream's field manager's account of the change from old (nil on
// create) to obj, as an Update by the manager. The writer's entry is
// listed last, so that `kubebus tap` and `kubebus why`, which name the
// newest entry's manager (the last listed when times tie), name it.
// It reports whether it recorded anything: a write without a field manager
// (a binding, a request without a manager) leaves obj as it was.
func (s *Server) recordManager(ctx context.Context, res *resource.Resource, obj, old runtime.Object, sub string) (recorded bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	if a, ok := ctx.Value(appliedKey{}).(*appliedFields); ok && a != nil {
		m.SetManagedFields(a.entries)
		lastWriter(m, a.manager, metav1.ManagedFieldsOperationApply, sub)
		return true
	}
	manager, _ := ctx.Value(managerKey{}).(string)
	if manager == "" {
		return false
	}
	fm := s.fields.For(res, resource.Subresource(sub))
	if fm == nil {
		return false
	}
	if old == nil {
		old = res.New()
	}
	setTypeMeta(res, old)
	setTypeMeta(res, obj)
	live, written := old, obj
	if sub == string(resource.Status) {
		live, written = s.fields.ForStatusUpdate(res, old), s.fields.ForStatusUpdate(res, obj)
	}
	if out := fm.UpdateNoErrors(live, written, manager); out != obj {
		if om, err := meta.Accessor(out); err == nil {
			m.SetManagedFields(om.GetManagedFields())
		}
	}
	lastWriter(m, manager, metav1.ManagedFieldsOperationUpdate, sub)
	return true
}

// lastWriter moves the entry of manager, op and sub to the end of the
// object's managedFields (upstream sorts entries by operation, time and
// manager name; the order carries no meaning to the field manager).
func lastWriter(m metav1.Object, manager string, op metav1.ManagedFieldsOperationType, sub string) {
	entries := m.GetManagedFields()
	for i, e := range entries {
		if e.Manager == manager && e.Operation == op && e.Subresource == sub {
			if i == len(entries)-1 {
				return
			}
			out := make([]metav1.ManagedFieldsEntry, 0, len(entries))
			out = append(append(out, entries[:i]...), entries[i+1:]...)
			m.SetManagedFields(append(out, e))
			return
		}
	}
}

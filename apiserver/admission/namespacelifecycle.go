package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// NamespaceGetter reads one namespace as it is stored now (an informer
// with a live fallback for what the informer has not seen yet). A missing
// namespace is an apierrors NotFound.
type NamespaceGetter interface {
	GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error)
}

// LiveNamespaceGetter reads one namespace from storage, past any cache.
// NamespaceLifecycle uses it, when its NamespaceGetter has it, for a
// namespace whose deletion it admitted a moment ago and that the cache
// still shows active.
type LiveNamespaceGetter interface {
	GetNamespaceLive(ctx context.Context, name string) (*corev1.Namespace, error)
}

var namespacesResource = schema.GroupResource{Resource: "namespaces"}

// forceLiveLookupTTL is how long after a namespace's deletion was admitted
// NamespaceLifecycle distrusts a cache that shows it active, as upstream.
const forceLiveLookupTTL = 30 * time.Second

// NamespaceLifecycle is upstream's NamespaceLifecycle plugin:
//
//   - the namespaces default, kube-system and kube-public may not be
//     deleted (403);
//   - a namespaced object may be created only in a namespace that exists
//     (404 `namespaces "X" not found`);
//   - nothing new may be created in a namespace being terminated (phase
//     Terminating or a deletion timestamp), Events included: 403 with the
//     NamespaceTerminating cause.
//
// For 30 seconds after it admits a namespace's deletion, a create in that
// namespace that the cache shows active reads the namespace from storage
// (LiveNamespaceGetter), so a create racing the deletion is refused, as
// upstream's forced live lookup.
//
// Namespaces themselves, cluster-scoped objects, updates and deletes of
// namespaced objects and local access reviews (whose answer must not
// reveal whether a namespace exists) pass, as upstream.
type NamespaceLifecycle struct {
	Namespaces NamespaceGetter
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu      sync.Mutex
	deleted map[string]time.Time // namespace → when its live lookups end
}

var _ auth.Admitter = (*NamespaceLifecycle)(nil)

// Admit implements auth.Admitter.
func (l *NamespaceLifecycle) Admit(ctx context.Context, req *auth.AdmissionRequest) error {
	a := req.Attributes
	if a.APIGroup == "" && a.Resource == "namespaces" {
		if req.Operation == auth.Delete {
			if immortalNamespace(a.Name) {
				return forbidRequest(req, errors.New("this namespace may not be deleted"))
			}
			l.markDeleted(a.Name)
		}
		return nil
	}
	if a.Namespace == "" || req.Operation != auth.Create {
		return nil
	}
	if a.APIGroup == "authorization.k8s.io" && a.Resource == "localsubjectaccessreviews" {
		return nil
	}
	ns, err := l.Namespaces.GetNamespace(ctx, a.Namespace)
	if apierrors.IsNotFound(err) {
		return apierrors.NewNotFound(namespacesResource, a.Namespace)
	}
	if err == nil && !terminating(ns) && l.recentlyDeleted(a.Namespace) {
		if lg, ok := l.Namespaces.(LiveNamespaceGetter); ok {
			ns, err = lg.GetNamespaceLive(ctx, a.Namespace)
			if apierrors.IsNotFound(err) {
				return apierrors.NewNotFound(namespacesResource, a.Namespace)
			}
		}
	}
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("looking up namespace %s: %w", a.Namespace, err))
	}
	if !terminating(ns) {
		return nil
	}
	err = forbidRequest(req, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
	var se *apierrors.StatusError
	if errors.As(err, &se) && se.ErrStatus.Details != nil {
		se.ErrStatus.Details.Causes = append(se.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    corev1.NamespaceTerminatingCause,
			Message: fmt.Sprintf("namespace %s is being terminated", a.Namespace),
			Field:   "metadata.namespace",
		})
	}
	return err
}

func (l *NamespaceLifecycle) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// markDeleted starts name's live lookups, dropping those that ended.
func (l *NamespaceLifecycle) markDeleted(name string) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for ns, until := range l.deleted {
		if !now.Before(until) {
			delete(l.deleted, ns)
		}
	}
	if l.deleted == nil {
		l.deleted = map[string]time.Time{}
	}
	l.deleted[name] = now.Add(forceLiveLookupTTL)
}

// recentlyDeleted reports whether name's deletion was admitted less than
// forceLiveLookupTTL ago.
func (l *NamespaceLifecycle) recentlyDeleted(name string) bool {
	l.mu.Lock()
	until, ok := l.deleted[name]
	l.mu.Unlock()
	return ok && l.now().Before(until)
}

// immortalNamespace reports whether name is one of the namespaces every
// cluster keeps.
func immortalNamespace(name string) bool {
	switch name {
	case metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic:
		return true
	}
	return false
}

func terminating(ns *corev1.Namespace) bool {
	return ns.Status.Phase == corev1.NamespaceTerminating || ns.DeletionTimestamp != nil
}

package admission

import (
	"context"
	"errors"
	"fmt"

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

var namespacesResource = schema.GroupResource{Resource: "namespaces"}

// NamespaceLifecycle is upstream's NamespaceLifecycle plugin:
//
//   - the namespaces default, kube-system and kube-public may not be
//     deleted (403);
//   - a namespaced object may be created or updated only in a namespace
//     that exists (404 `namespaces "X" not found`);
//   - nothing new may be created in a namespace being terminated (phase
//     Terminating or a deletion timestamp): 403 with the
//     NamespaceTerminating cause. Events are still let in, so the
//     namespace controller can report on the teardown.
//
// Namespaces themselves, cluster-scoped objects, deletes of namespaced
// objects and local access reviews (whose answer must not reveal whether
// a namespace exists) pass.
type NamespaceLifecycle struct {
	Namespaces NamespaceGetter
}

var _ auth.Admitter = NamespaceLifecycle{}

// Admit implements auth.Admitter.
func (l NamespaceLifecycle) Admit(ctx context.Context, req *auth.AdmissionRequest) error {
	a := req.Attributes
	if a.APIGroup == "" && a.Resource == "namespaces" {
		if req.Operation == auth.Delete && immortalNamespace(a.Name) {
			return forbidRequest(req, errors.New("this namespace may not be deleted"))
		}
		return nil
	}
	if a.Namespace == "" || (req.Operation != auth.Create && req.Operation != auth.Update) {
		return nil
	}
	if a.APIGroup == "authorization.k8s.io" && a.Resource == "localsubjectaccessreviews" {
		return nil
	}
	ns, err := l.Namespaces.GetNamespace(ctx, a.Namespace)
	if apierrors.IsNotFound(err) {
		return apierrors.NewNotFound(namespacesResource, a.Namespace)
	}
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("looking up namespace %s: %w", a.Namespace, err))
	}
	if req.Operation != auth.Create || !terminating(ns) || isEvent(a) {
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

func isEvent(a auth.Attributes) bool {
	return a.Resource == "events" && (a.APIGroup == "" || a.APIGroup == "events.k8s.io")
}

package apiserver

import (
	"context"
	"fmt"
	"net/http"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/resource"
)

// TokenIssuer signs ServiceAccount tokens for the TokenRequest API
// (serviceaccounts/token). PrepareTokenRequest defaults and validates a
// request, so that an invalid one is refused before its bound object is
// looked up; TokenRequest signs one, bound to bound (a Pod, Secret or Node
// the server has read), or nil.
type TokenIssuer interface {
	PrepareTokenRequest(sa *corev1.ServiceAccount, req *authnv1.TokenRequest) (*authnv1.TokenRequest, error)
	TokenRequest(ctx context.Context, sa *corev1.ServiceAccount, req *authnv1.TokenRequest, bound metav1.Object) (*authnv1.TokenRequest, error)
}

var tokenRequestGK = schema.GroupKind{Group: "authentication.k8s.io", Kind: "TokenRequest"}

// tokenRequest answers POST .../serviceaccounts/NAME/token in upstream's
// order: admission sees the request as sent, as upstream's mutating
// admission does before the TokenRequest REST (NodeRestriction limits a
// node to its own pods and to the audiences they use); then the
// ServiceAccount must exist; the request is defaulted and validated; the
// bound object must exist (a token bound to a pod is valid only while that
// pod is); and the answer carries the signed token. Nothing is stored.
func (s *Server) tokenRequest(w http.ResponseWriter, r *http.Request, ri RequestInfo, res *resource.Resource) error {
	if s.cfg.TokenIssuer == nil {
		return apierrors.NewServiceUnavailable("the TokenRequest API is not configured on this server")
	}
	ctx := r.Context()
	isDryRun, err := dryRun(r)
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	req := &authnv1.TokenRequest{}
	if _, err := decodeRequest(r, body, req, metav1.FieldValidationStrict); err != nil {
		return err
	}
	if req.Namespace != "" && req.Namespace != ri.Namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	req.Namespace = ri.Namespace
	// Admission names the account of the URL, whatever the body says.
	admitted := req.DeepCopy()
	admitted.Name = ri.Name
	if err := s.admit(ctx, res, auth.Create, admitted, nil, string(resource.Token), isDryRun); err != nil {
		return err
	}
	if req.Name != "" && req.Name != ri.Name {
		return apierrors.NewInvalid(tokenRequestGK, ri.Name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "name"), req.Name, "must match the service account name if specified")})
	}
	req.Name = ri.Name
	saObj, _, err := s.readObject(ctx, res, keyFor(res, ri.Namespace, ri.Name), ri.Name, false)
	if err != nil {
		return err
	}
	sa := saObj.(*corev1.ServiceAccount)
	if sa.DeletionTimestamp != nil {
		return apierrors.NewNotFound(res.GroupResource(), ri.Name)
	}
	req, err = s.cfg.TokenIssuer.PrepareTokenRequest(sa, req)
	if err != nil {
		return err
	}
	bound, err := s.tokenBoundObject(ctx, ri.Namespace, req)
	if err != nil {
		return err
	}
	if isDryRun {
		req.TypeMeta = metav1.TypeMeta{Kind: "TokenRequest", APIVersion: "authentication.k8s.io/v1"}
		return writeNegotiated(w, r, http.StatusCreated, req)
	}
	out, err := s.cfg.TokenIssuer.TokenRequest(ctx, sa, req, bound)
	if err != nil {
		return err
	}
	if asked, given := req.Spec.ExpirationSeconds, out.Spec.ExpirationSeconds; asked != nil && given != nil && *given < *asked {
		addWarnings(ctx, []string{fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", *asked, *given)})
	}
	out.TypeMeta = metav1.TypeMeta{Kind: "TokenRequest", APIVersion: "authentication.k8s.io/v1"}
	return writeNegotiated(w, r, http.StatusCreated, out)
}

// tokenBoundObject reads the object a TokenRequest binds its token to.
func (s *Server) tokenBoundObject(ctx context.Context, ns string, req *authnv1.TokenRequest) (metav1.Object, error) {
	ref := req.Spec.BoundObjectRef
	if ref == nil {
		return nil, nil
	}
	// As upstream: the kind decides, in the core group (whatever the
	// version); anything else cannot carry a token.
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	var gvr schema.GroupVersionResource
	switch {
	case gvk.Group == "" && gvk.Kind == "Pod":
		gvr = corev1.SchemeGroupVersion.WithResource("pods")
	case gvk.Group == "" && gvk.Kind == "Secret":
		gvr = corev1.SchemeGroupVersion.WithResource("secrets")
	case gvk.Group == "" && gvk.Kind == "Node":
		gvr = corev1.SchemeGroupVersion.WithResource("nodes")
		ns = ""
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
	}
	if ref.Name == "" {
		return nil, apierrors.NewBadRequest("Name parameter required.")
	}
	bres, ok := s.table.get(gvr)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("resource %s is not served", gvr))
	}
	obj, _, err := s.readObject(ctx, bres, keyFor(bres, ns, ref.Name), ref.Name, false)
	if err != nil {
		return nil, err
	}
	m := obj.(interface {
		runtime.Object
		metav1.Object
	})
	if ref.UID != "" && ref.UID != m.GetUID() {
		return nil, apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name, fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	// An object being deleted still gets tokens, as upstream: a pod's
	// kubelet renews them while the pod terminates, and the authenticator
	// refuses them a minute after the object's deletionTimestamp.
	return m, nil
}

package serviceaccount

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultIssuer is the issuer of tokens when none is configured, as a
// kubeadm cluster's --service-account-issuer.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// Upstream's token request limits and defaults.
const (
	defaultExpirationSeconds = 3600
	minExpiration            = 10 * time.Minute
	maxExpirationSeconds     = 1 << 32
	// warnOnlyExpirationSeconds is what the kubelet asks for a projected
	// token; with ExtendExpiration such a pod-bound token lives
	// extendedExpiration and only warns after the hour.
	warnOnlyExpirationSeconds = 60*60 + 7
	extendedExpiration        = 365 * 24 * time.Hour
)

var tokenRequestKind = authnv1.SchemeGroupVersion.WithKind("TokenRequest").GroupKind()

// NodeGetter finds a node by name.
type NodeGetter interface {
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
}

// IssuerConfig configures an Issuer.
type IssuerConfig struct {
	// Key signs tokens (required).
	Key *rsa.PrivateKey
	// Issuer is the iss claim; DefaultIssuer when empty.
	Issuer string
	// APIAudiences are the audiences of a token request that names none;
	// [Issuer] when empty.
	APIAudiences []string
	// MaxExpiration caps a requested lifetime: no cap when zero, else
	// between an hour and 2^32 seconds, as upstream's
	// --service-account-max-token-expiration.
	MaxExpiration time.Duration
	// ExtendExpiration, as upstream's --service-account-extend-token-expiration,
	// makes a pod-bound token for the API audiences that asks for 3607 s
	// live a year, with warnafter set at 3607 s.
	ExtendExpiration bool
	// Nodes, when set, is asked the UID of a bound pod's node for the
	// token's node claim; without it the claim carries the node name only.
	Nodes NodeGetter
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

func (c *IssuerConfig) validate() error {
	if c.Key == nil {
		return errors.New("serviceaccount: issuer needs a signing key")
	}
	if c.Key.N.BitLen() < keyBits {
		return fmt.Errorf("serviceaccount: signing key has %d bits, want at least %d", c.Key.N.BitLen(), keyBits)
	}
	if c.MaxExpiration != 0 && (c.MaxExpiration < time.Hour || c.MaxExpiration > maxExpirationSeconds*time.Second) {
		return errors.New("serviceaccount: the maximum token expiration must be between 1 hour and 2^32 seconds")
	}
	return nil
}

// Issuer signs ServiceAccount tokens.
type Issuer struct {
	issuer    string
	audiences []string
	maxExp    time.Duration
	extend    bool
	nodes     NodeGetter
	now       func() time.Time
	signer    jose.Signer
}

// NewIssuer returns an Issuer signing RS256 JWTs with cfg.Key, the key id
// in their kid header.
func NewIssuer(cfg IssuerConfig) (*Issuer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	kid, err := keyID(&cfg.Key.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: deriving key id: %w", err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{
		Algorithm: jose.RS256,
		Key:       jose.JSONWebKey{Key: cfg.Key, KeyID: kid, Algorithm: string(jose.RS256), Use: "sig"},
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: creating signer: %w", err)
	}
	i := &Issuer{
		issuer:    cfg.Issuer,
		audiences: slices.Clone(cfg.APIAudiences),
		maxExp:    cfg.MaxExpiration,
		extend:    cfg.ExtendExpiration,
		nodes:     cfg.Nodes,
		now:       cfg.Now,
		signer:    signer,
	}
	if i.issuer == "" {
		i.issuer = DefaultIssuer
	}
	if len(i.audiences) == 0 {
		i.audiences = []string{i.issuer}
	}
	if i.now == nil {
		i.now = time.Now
	}
	return i, nil
}

// bindableKinds are the kinds of the core group a token may be bound to.
var bindableKinds = map[string]bool{"Pod": true, "Secret": true, "Node": true}

// BoundRef returns the kind and name of the object a token request binds
// the token to, which the caller fetches before TokenRequest: a Pod or
// Secret from the ServiceAccount's namespace, or a Node. ok is false when
// there is nothing to fetch (no reference, no name, or a kind that cannot
// be bound; TokenRequest then answers with the right error).
func BoundRef(req *authnv1.TokenRequest) (kind, name string, ok bool) {
	if req == nil || req.Spec.BoundObjectRef == nil {
		return "", "", false
	}
	r := req.Spec.BoundObjectRef
	gvk := schema.FromAPIVersionAndKind(r.APIVersion, r.Kind)
	if gvk.Group != "" || !bindableKinds[gvk.Kind] || r.Name == "" {
		return "", "", false
	}
	return gvk.Kind, r.Name, true
}

// PrepareTokenRequest defaults and validates a TokenRequest for sa, as
// upstream's serviceaccounts/token storage does once the account is found:
// the name and namespace must match the account's if given, the expiration
// defaults to an hour and the audiences to the API server's, and the spec
// must be valid. It returns the defaulted request (a copy).
// Errors are API status errors.
func (i *Issuer) PrepareTokenRequest(sa *corev1.ServiceAccount, req *authnv1.TokenRequest) (*authnv1.TokenRequest, error) {
	if sa == nil || req == nil {
		return nil, apierrors.NewInternalError(errors.New("token request without a service account"))
	}
	if req.Name != "" && req.Name != sa.Name {
		return nil, apierrors.NewInvalid(tokenRequestKind, sa.Name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "name"), req.Name, "must match the service account name if specified")})
	}
	if req.Namespace != "" && req.Namespace != sa.Namespace {
		return nil, apierrors.NewInvalid(tokenRequestKind, sa.Name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "namespace"), req.Namespace, "must match the service account namespace if specified")})
	}
	out := req.DeepCopy()
	if out.Spec.ExpirationSeconds == nil {
		secs := int64(defaultExpirationSeconds)
		out.Spec.ExpirationSeconds = &secs
	}
	if len(out.Spec.Audiences) == 0 {
		out.Spec.Audiences = slices.Clone(i.audiences)
	}
	out.Name, out.Namespace = sa.Name, sa.Namespace
	out.CreationTimestamp = metav1.NewTime(i.now())
	out.Status = authnv1.TokenRequestStatus{}
	if errs := validateSpec(&out.Spec); len(errs) > 0 {
		return nil, apierrors.NewInvalid(tokenRequestKind, "", errs)
	}
	return out, nil
}

// TokenRequest answers a TokenRequest for sa as upstream's
// serviceaccounts/token subresource: it defaults and validates the spec
// (PrepareTokenRequest), binds the token to bound (nil, or the object
// BoundRef names, fetched by the caller, who returns its NotFound as is),
// caps the lifetime at MaxExpiration, if any, and returns a copy of req
// with the token in its status (and the lifetime it was given in
// spec.expirationSeconds). Errors are API status errors.
func (i *Issuer) TokenRequest(ctx context.Context, sa *corev1.ServiceAccount, req *authnv1.TokenRequest, bound metav1.Object) (*authnv1.TokenRequest, error) {
	out, err := i.PrepareTokenRequest(sa, req)
	if err != nil {
		return nil, err
	}
	now := out.CreationTimestamp.Time
	b, err := i.bind(ctx, sa, out.Spec.BoundObjectRef, bound)
	if err != nil {
		return nil, err
	}
	if maxSecs := int64(i.maxExp / time.Second); maxSecs > 0 && *out.Spec.ExpirationSeconds > maxSecs {
		*out.Spec.ExpirationSeconds = maxSecs
	}
	exp := time.Duration(*out.Spec.ExpirationSeconds) * time.Second
	var warnAfter time.Duration
	if i.extend && b.pod != nil && *out.Spec.ExpirationSeconds == warnOnlyExpirationSeconds && i.apiAudiencesOnly(out.Spec.Audiences) {
		warnAfter, exp = exp, extendedExpiration
	}
	c := newClaims(i.issuer, sa, b, out.Spec.Audiences, now, exp, warnAfter, uuid.NewString())
	tok, err := i.sign(c)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("failed to generate token: %w", err))
	}
	out.Status = authnv1.TokenRequestStatus{
		Token:               tok,
		ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(*out.Spec.ExpirationSeconds) * time.Second)),
	}
	return out, nil
}

// audienceClaim writes aud as an array even for one audience, as upstream
// tokens have it; go-jose/v4 would write a lone audience as a string.
type audienceClaim struct {
	Audience []string `json:"aud,omitempty"`
}

func (i *Issuer) sign(c tokenClaims) (string, error) {
	public := c.public
	public.Audience = nil
	return jwt.Signed(i.signer).Claims(c.private).Claims(audienceClaim{c.public.Audience}).Claims(public).Serialize()
}

// validateSpec is upstream's ValidateTokenRequest, with the bound object's
// name required.
func validateSpec(spec *authnv1.TokenRequestSpec) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec")
	switch secs := *spec.ExpirationSeconds; {
	case secs < int64(minExpiration/time.Second):
		errs = append(errs, field.Invalid(p.Child("expirationSeconds"), secs, "may not specify a duration less than 10 minutes"))
	case secs > maxExpirationSeconds:
		errs = append(errs, field.Invalid(p.Child("expirationSeconds"), secs, "may not specify a duration larger than 2^32 seconds"))
	}
	if r := spec.BoundObjectRef; r != nil && r.Name == "" {
		errs = append(errs, field.Required(p.Child("boundObjectRef", "name"), ""))
	}
	return errs
}

// bind checks the object the caller fetched for r and returns what the
// token is bound to.
func (i *Issuer) bind(ctx context.Context, sa *corev1.ServiceAccount, r *authnv1.BoundObjectReference, bound metav1.Object) (boundObjects, error) {
	if r == nil {
		if bound != nil {
			return boundObjects{}, apierrors.NewInternalError(errors.New("bound object given without a bound object reference"))
		}
		return boundObjects{}, nil
	}
	gvk := schema.FromAPIVersionAndKind(r.APIVersion, r.Kind)
	if gvk.Group != "" || !bindableKinds[gvk.Kind] {
		return boundObjects{}, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
	}
	if bound == nil || bound.GetName() != r.Name {
		return boundObjects{}, apierrors.NewInternalError(fmt.Errorf("bound %s %q was not fetched", gvk.Kind, r.Name))
	}
	if gvk.Kind != "Node" && bound.GetNamespace() != sa.Namespace {
		return boundObjects{}, apierrors.NewInternalError(fmt.Errorf("bound %s %q is not in namespace %q", gvk.Kind, r.Name, sa.Namespace))
	}
	var b boundObjects
	var ok bool
	switch gvk.Kind {
	case "Pod":
		if b.pod, ok = bound.(*corev1.Pod); !ok {
			break
		}
		if b.pod.Spec.ServiceAccountName != sa.Name {
			return boundObjects{}, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", sa.Name))
		}
		node, err := i.podNode(ctx, b.pod)
		if err != nil {
			return boundObjects{}, err
		}
		b.node = node
	case "Secret":
		b.secret, ok = bound.(*corev1.Secret)
	case "Node":
		b.node, ok = bound.(*corev1.Node)
	}
	if !ok {
		return boundObjects{}, apierrors.NewInternalError(fmt.Errorf("bound %s %q is a %T", gvk.Kind, r.Name, bound))
	}
	if r.UID != "" && r.UID != bound.GetUID() {
		return boundObjects{}, apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, r.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", r.UID))
	}
	return b, nil
}

// podNode returns the node of a scheduled pod for the token's node claim:
// the Node when Nodes finds it, else one carrying only the name (upstream
// too keeps the name when the node is gone).
func (i *Issuer) podNode(ctx context.Context, pod *corev1.Pod) (*corev1.Node, error) {
	name := pod.Spec.NodeName
	if name == "" {
		return nil, nil
	}
	if i.nodes != nil {
		node, err := i.nodes.GetNode(ctx, name)
		switch {
		case err == nil:
			return node, nil
		case !apierrors.IsNotFound(err):
			return nil, apierrors.NewInternalError(fmt.Errorf("getting node %q of pod %q: %w", name, pod.Name, err))
		}
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil
}

// apiAudiencesOnly reports whether every audience is one of the API
// server's.
func (i *Issuer) apiAudiencesOnly(auds []string) bool {
	for _, a := range auds {
		if !slices.Contains(i.audiences, a) {
			return false
		}
	}
	return true
}

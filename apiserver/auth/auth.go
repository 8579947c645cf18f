// Package auth holds the API server's authentication, authorization and
// admission seams: who is asking (User, from a verified client certificate,
// a static or a ServiceAccount bearer token), may they (Authorizer: the Node
// authorizer and RBAC behind a Union), and is the write acceptable
// (Admitter). The handlers see only these interfaces.
package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// User is an authenticated identity.
type User struct {
	Name   string
	UID    string
	Groups []string
	// Extra carries what an authenticator knows beyond name and groups,
	// such as the pod a ServiceAccount token is bound to
	// ("authentication.kubernetes.io/pod-name").
	Extra map[string][]string
}

// Well-known users and groups.
const (
	AnonymousUser          = "system:anonymous"
	AllUnauthenticated     = "system:unauthenticated"
	AllAuthenticated       = "system:authenticated"
	SystemPrivilegedGroup  = "system:masters"
	NodesGroup             = "system:nodes"
	NodeUserPrefix         = "system:node:"
	ServiceAccountPrefix   = "system:serviceaccount:"
	ServiceAccountsGroup   = "system:serviceaccounts"
	ServiceAccountGroupPfx = "system:serviceaccounts:"
)

// Anonymous is the user of a request that presented no credential.
var Anonymous = User{Name: AnonymousUser, Groups: []string{AllUnauthenticated}}

// APIServer is the user the API server's own writes are made as (the
// bootstrap objects, the kubernetes Service, quota accounting), as
// upstream's loopback client: a member of system:masters.
var APIServer = User{Name: "system:apiserver", Groups: []string{SystemPrivilegedGroup, AllAuthenticated}}

// InGroup reports whether u is a member of group.
func (u User) InGroup(group string) bool {
	for _, g := range u.Groups {
		if g == group {
			return true
		}
	}
	return false
}

// WithAuthenticated returns u with system:authenticated among its groups,
// as upstream adds to every authenticated user but the anonymous one and
// one whose credential already names system:authenticated or
// system:unauthenticated.
func (u User) WithAuthenticated() User {
	if u.Name == AnonymousUser || u.InGroup(AllAuthenticated) || u.InGroup(AllUnauthenticated) {
		return u
	}
	u.Groups = append(append(make([]string, 0, len(u.Groups)+1), u.Groups...), AllAuthenticated)
	return u
}

// NodeName returns the node a user is the kubelet of ("system:node:NAME"
// in system:nodes), or "" and false.
func (u User) NodeName() (string, bool) {
	name, ok := strings.CutPrefix(u.Name, NodeUserPrefix)
	if !ok || name == "" || !u.InGroup(NodesGroup) {
		return "", false
	}
	return name, true
}

// ServiceAccountUser returns the user name of a ServiceAccount.
func ServiceAccountUser(namespace, name string) string {
	return ServiceAccountPrefix + namespace + ":" + name
}

// SplitServiceAccountUser returns the namespace and name of a
// ServiceAccount user name, or ok false when user is not one: not
// system:serviceaccount:NAMESPACE:NAME with a valid namespace name and a
// valid account name, as upstream's serviceaccount.SplitUsername.
func SplitServiceAccountUser(user string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, ServiceAccountPrefix)
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	if !ok || len(apivalidation.ValidateNamespaceName(namespace, false)) > 0 || len(apivalidation.ValidateServiceAccountName(name, false)) > 0 {
		return "", "", false
	}
	return namespace, name, true
}

type userKey struct{}

// WithUser returns ctx carrying u.
func WithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user in ctx, or Anonymous.
func UserFrom(ctx context.Context) User {
	if u, ok := ctx.Value(userKey{}).(User); ok {
		return u
	}
	return Anonymous
}

// Authenticator finds the user of a request. ok is false when the request
// carries no credential this authenticator knows; err is set when it carries
// a bad one.
type Authenticator interface {
	Authenticate(r *http.Request) (u User, ok bool, err error)
}

// Chain tries authenticators in order: the first that knows the
// credential answers. When none does, the first error is returned (a bad
// credential is a 401), else ok is false (no credential: anonymous).
type Chain []Authenticator

// Authenticate implements Authenticator.
func (c Chain) Authenticate(r *http.Request) (User, bool, error) {
	var firstErr error
	for _, a := range c {
		u, ok, err := a.Authenticate(r)
		if ok && err == nil {
			return u, true, nil
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return User{}, false, firstErr
}

// ErrInvalidToken is the answer to a bearer token no token authenticator
// accepts, as upstream's bearer token authenticator gives it: the request
// is refused (401), never anonymous.
var ErrInvalidToken = errors.New("invalid bearer token")

// TokenAuthenticator authenticates a bearer token for audiences (the API
// server's when none): the user and the requested audiences the token is
// valid for. ok is false without error when the token is not one this
// authenticator knows; err is set when it knows it and refuses it.
type TokenAuthenticator interface {
	AuthenticateTokenAudiences(ctx context.Context, token string, audiences []string) (u User, matched []string, ok bool, err error)
}

// Bearer authenticates a request by its "Authorization: Bearer <token>"
// header with token authenticators, as upstream's bearertoken
// authenticator: the scheme is matched case-insensitively, a request
// without a token has no credential (ok false), and a token nobody accepts
// is an error (ErrInvalidToken when none said why). It also reviews tokens
// for TokenReview the same way.
type Bearer struct {
	Tokens TokenAuthenticator
}

// Authenticate implements Authenticator. The header of an authenticated
// request is removed so that nothing later in the server uses the token.
func (b Bearer) Authenticate(r *http.Request) (User, bool, error) {
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return User{}, false, nil
	}
	u, _, ok, err := b.AuthenticateTokenAudiences(r.Context(), token, nil)
	if ok {
		r.Header.Del("Authorization")
	}
	return u, ok, err
}

// AuthenticateTokenAudiences implements TokenAuthenticator: a token that
// no authenticator accepts and none refused is ErrInvalidToken.
func (b Bearer) AuthenticateTokenAudiences(ctx context.Context, token string, audiences []string) (User, []string, bool, error) {
	if b.Tokens == nil {
		return User{}, nil, false, ErrInvalidToken
	}
	u, matched, ok, err := b.Tokens.AuthenticateTokenAudiences(ctx, token, audiences)
	if ok && err == nil {
		return u, matched, true, nil
	}
	if err == nil {
		err = ErrInvalidToken
	}
	return User{}, nil, false, err
}

// bearerToken returns the token of an Authorization header value, as
// upstream reads it: the word after a case-insensitive "Bearer" and one
// space (anything after a further space is ignored). An empty token, as
// with two spaces after the scheme, is no token.
func bearerToken(header string) (string, bool) {
	scheme, rest, found := strings.Cut(strings.TrimSpace(header), " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token, _, _ := strings.Cut(rest, " ")
	return token, token != ""
}

// TokenUnion tries token authenticators in order: the first that accepts
// the token answers. When none does, the errors of those that refused it
// are returned together (upstream's aggregate), or none: ok false without
// error.
type TokenUnion []TokenAuthenticator

// AuthenticateTokenAudiences implements TokenAuthenticator.
func (tu TokenUnion) AuthenticateTokenAudiences(ctx context.Context, token string, audiences []string) (User, []string, bool, error) {
	var errs []error
	for _, a := range tu {
		u, matched, ok, err := a.AuthenticateTokenAudiences(ctx, token, audiences)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return u, matched, true, nil
		}
	}
	switch len(errs) {
	case 0:
		return User{}, nil, false, nil
	case 1:
		return User{}, nil, false, errs[0]
	}
	return User{}, nil, false, utilerrors.NewAggregate(errs)
}

// AudienceAgnostic makes a token table that knows nothing of audiences
// (static tokens) a TokenAuthenticator valid for the API server's
// audiences only, as upstream's WrapAudienceAgnosticToken: with no
// requested audiences its tokens authenticate for APIAudiences; with
// requested audiences they authenticate only when those include one of
// APIAudiences, and report the shared ones.
type AudienceAgnostic struct {
	APIAudiences []string
	Tokens       Tokens
}

// AuthenticateTokenAudiences implements TokenAuthenticator.
func (a AudienceAgnostic) AuthenticateTokenAudiences(ctx context.Context, token string, audiences []string) (User, []string, bool, error) {
	if len(audiences) == 0 {
		audiences = a.APIAudiences
	}
	var matched []string
	for _, aud := range audiences {
		if slices.Contains(a.APIAudiences, aud) {
			matched = append(matched, aud)
		}
	}
	if len(audiences) > 0 && len(matched) == 0 {
		return User{}, nil, false, nil
	}
	u, ok, err := a.Tokens.AuthenticateToken(ctx, token)
	if !ok || err != nil {
		return User{}, nil, false, err
	}
	return u, matched, true, nil
}

// Tokens is a fixed table of bearer tokens (a --token-auth-file), valid for
// any audience: serve it through AudienceAgnostic.
type Tokens map[string]User

// AuthenticateToken returns the user of token, comparing in constant time.
// An unknown token is ok false without error.
func (t Tokens) AuthenticateToken(_ context.Context, token string) (User, bool, error) {
	for known, u := range t {
		if subtle.ConstantTimeCompare([]byte(known), []byte(token)) == 1 {
			return u, true, nil
		}
	}
	return User{}, false, nil
}

// Attributes describe one request for authorization, as upstream's
// authorizer.Attributes: a resource request (ResourceRequest true: Verb is
// get, list, watch, create, update, patch, delete, deletecollection or a
// special verb such as bind, escalate, impersonate, approve, sign) or a
// non-resource one (Path, with Verb the lower-case HTTP method: get, post,
// put, patch, delete, head).
type Attributes struct {
	User            User
	Verb            string
	ResourceRequest bool
	APIGroup        string
	APIVersion      string
	Resource        string
	Subresource     string
	Namespace       string
	Name            string
	Path            string // for non-resource requests
	// FieldSelector holds the requirements of a list's, watch's or
	// deletecollection's field selector (none without one), as upstream's
	// GetFieldSelector: the handler filters by the same selector, so an
	// authorizer may allow by it (a kubelet lists only the pods whose
	// spec.nodeName is its node).
	FieldSelector fields.Requirements
}

// Decision is an authorizer's answer.
type Decision int

// Decisions. NoOpinion lets the next authorizer of a Union decide; a
// request no authorizer allows is refused.
const (
	Deny Decision = iota
	Allow
	NoOpinion
)

// Authorizer decides whether a request may proceed. The reason explains an
// Allow or a Deny (it ends up in the Forbidden message and in access
// reviews).
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (Decision, string, error)
}

// AlwaysAllow allows every request (tests, and --authorization-mode=AlwaysAllow).
type AlwaysAllow struct{}

// Authorize implements Authorizer.
func (AlwaysAllow) Authorize(context.Context, Attributes) (Decision, string, error) {
	return Allow, "", nil
}

// Union asks authorizers in order: the first Allow or Deny decides; when
// all have no opinion the answer is NoOpinion, which the server treats as
// a refusal. An error is remembered and returned with NoOpinion when no
// later authorizer decides, as upstream's union does.
type Union []Authorizer

// Authorize implements Authorizer.
func (u Union) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	var reasons []string
	var firstErr error
	for _, z := range u {
		d, reason, err := z.Authorize(ctx, a)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if d == Allow || d == Deny {
			return d, reason, nil
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
	}
	return NoOpinion, strings.Join(reasons, "\n"), firstErr
}

// SystemMasters allows every request of a member of system:masters and has
// no opinion on the rest, as upstream's privileged-group authorizer that
// runs before the Node authorizer and RBAC.
type SystemMasters struct{}

// Authorize implements Authorizer.
func (SystemMasters) Authorize(_ context.Context, a Attributes) (Decision, string, error) {
	if a.User.InGroup(SystemPrivilegedGroup) {
		return Allow, "", nil
	}
	return NoOpinion, "", nil
}

// Operation is the kind of write being admitted.
type Operation string

// Operations.
const (
	Create Operation = "CREATE"
	Update Operation = "UPDATE"
	Delete Operation = "DELETE"
)

// Connect is a request to a connect subresource (exec, attach, portforward).
const Connect Operation = "CONNECT"

// AdmissionRequest is a write about to be stored. Attributes carry the user,
// the resource, its group, namespace and name; Kind is the object's kind.
type AdmissionRequest struct {
	Operation   Operation
	Attributes  Attributes
	Kind        schema.GroupVersionKind
	Object      runtime.Object // the new object (nil on delete)
	OldObject   runtime.Object // the stored object (nil on create)
	DryRun      bool
	Subresource string
	// Posted is true for a create POSTed to its collection, whose URL
	// names no object (upstream's request name is empty), as against a
	// create by server-side apply or by an update, whose URL names it.
	Posted bool
	// Warnings are sent back to the client as Warning headers (PodSecurity
	// warn mode, for one); plugins append to them.
	Warnings []string
}

// RuleResolver lists the rules that apply to a user in a namespace, for
// SelfSubjectRulesReview and for escalation checks. Incomplete is true
// when some rules could not be resolved (a binding to a missing role).
type RuleResolver interface {
	RulesFor(ctx context.Context, u User, namespace string) (rules []rbacv1.PolicyRule, incomplete bool, err error)
}

// Admitter may mutate a write or reject it with an API error.
type Admitter interface {
	Admit(ctx context.Context, req *AdmissionRequest) error
}

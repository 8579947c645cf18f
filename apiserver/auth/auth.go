// Package auth holds the API server's authentication, authorization and
// admission seams: who is asking (User, from a verified client certificate,
// a static or a ServiceAccount bearer token), may they (Authorizer: the Node
// authorizer and RBAC behind a Union), and is the write acceptable
// (Admitter). The handlers see only these interfaces.
package auth

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
// as upstream adds to every authenticated user but the anonymous one.
func (u User) WithAuthenticated() User {
	if u.Name == AnonymousUser || u.InGroup(AllAuthenticated) {
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
// ServiceAccount user name, or ok false.
func SplitServiceAccountUser(user string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, ServiceAccountPrefix)
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	if !ok || namespace == "" || name == "" || strings.Contains(name, ":") {
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

// ClientCert authenticates a request by its verified TLS client certificate:
// the common name is the user and the organizations are the groups.
type ClientCert struct{}

// Authenticate implements Authenticator.
func (ClientCert) Authenticate(r *http.Request) (User, bool, error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return User{}, false, nil
	}
	c := r.TLS.VerifiedChains[0][0]
	return User{Name: c.Subject.CommonName, Groups: append([]string(nil), c.Subject.Organization...)}, true, nil
}

// Tokens authenticates bearer tokens against a fixed table.
type Tokens map[string]User

// Authenticate implements Authenticator.
func (t Tokens) Authenticate(r *http.Request) (User, bool, error) {
	h := r.Header.Get("Authorization")
	tok, found := strings.CutPrefix(h, "Bearer ")
	if !found {
		return User{}, false, nil
	}
	for known, u := range t {
		if subtle.ConstantTimeCompare([]byte(known), []byte(strings.TrimSpace(tok))) == 1 {
			return u, true, nil
		}
	}
	return User{}, false, errInvalidToken
}

type authError string

func (e authError) Error() string { return string(e) }

const errInvalidToken = authError("invalid bearer token")

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

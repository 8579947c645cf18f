// Package auth holds the API server's authentication, authorization and
// admission seams: who is asking (User, from a verified client certificate or
// a bearer token), may they (Authorizer), and is the write acceptable
// (Admitter). Today the authorizer allows everything; RBAC and admission
// plugins plug in behind these interfaces without touching the handlers.
package auth

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// User is an authenticated identity.
type User struct {
	Name   string
	Groups []string
}

// Anonymous is the user of a request that presented no credential.
var Anonymous = User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}

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

// Chain tries authenticators in order.
type Chain []Authenticator

// Authenticate implements Authenticator.
func (c Chain) Authenticate(r *http.Request) (User, bool, error) {
	for _, a := range c {
		u, ok, err := a.Authenticate(r)
		if err != nil || ok {
			return u, ok, err
		}
	}
	return User{}, false, nil
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

// Attributes describe one request for authorization.
type Attributes struct {
	User        User
	Verb        string
	APIGroup    string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	Path        string // for non-resource requests
}

// Decision is an authorizer's answer.
type Decision int

// Decisions.
const (
	Deny Decision = iota
	Allow
)

// Authorizer decides whether a request may proceed.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (Decision, string, error)
}

// AlwaysAllow is the authorizer until RBAC lands.
type AlwaysAllow struct{}

// Authorize implements Authorizer.
func (AlwaysAllow) Authorize(context.Context, Attributes) (Decision, string, error) {
	return Allow, "", nil
}

// Operation is the kind of write being admitted.
type Operation string

// Operations.
const (
	Create Operation = "CREATE"
	Update Operation = "UPDATE"
	Delete Operation = "DELETE"
)

// AdmissionRequest is a write about to be stored.
type AdmissionRequest struct {
	Operation   Operation
	Attributes  Attributes
	Object      runtime.Object // the new object (nil on delete)
	OldObject   runtime.Object // the stored object (nil on create)
	DryRun      bool
	Subresource string
}

// Admitter may mutate a write or reject it with an API error.
type Admitter interface {
	Admit(ctx context.Context, req *AdmissionRequest) error
}

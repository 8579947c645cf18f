package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/serviceaccount"
)

// testSecurity builds the authenticators of a server, with a token file
// holding one static token, "static-token", for alice when withTokenFile.
func testSecurity(t *testing.T, withTokenFile bool) *security {
	t.Helper()
	dir := t.TempDir()
	o := Options{PKIDir: dir}
	if withTokenFile {
		o.TokenFile = filepath.Join(dir, "tokens.csv")
		if err := os.WriteFile(o.TokenFile, []byte("static-token,alice,alice-uid,\"dev,ops\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sec, err := newSecurity(o, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sec
}

// TestBearerTokens checks the request authenticator: a bearer token nobody
// accepts is an error (a 401), never anonymous, and the scheme is matched
// case-insensitively, as upstream's bearertoken authenticator.
func TestBearerTokens(t *testing.T) {
	t.Parallel()
	sec := testSecurity(t, true)
	tests := []struct {
		name   string
		header string // "" for none
		user   string // "" when not authenticated
		uid    string
		err    bool
	}{
		{name: "static token", header: "Bearer static-token", user: "alice", uid: "alice-uid"},
		{name: "lower-case scheme", header: "bearer static-token", user: "alice", uid: "alice-uid"},
		{name: "upper-case scheme", header: "BEARER static-token", user: "alice", uid: "alice-uid"},
		{name: "surrounding space", header: "  Bearer static-token  ", user: "alice", uid: "alice-uid"},
		{name: "garbage token", header: "Bearer garbage", err: true},
		{name: "foreign JWT", header: "Bearer eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2V4YW1wbGUuY29tIn0.c2ln", err: true},
		{name: "no header"},
		{name: "empty token", header: "Bearer "},
		{name: "space before the token", header: "Bearer  static-token"},
		{name: "basic auth", header: "Basic YWxpY2U6cHc="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodGet, "/api", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			u, ok, err := sec.authn.Authenticate(r)
			if (err != nil) != tt.err {
				t.Fatalf("error = %v, want error %v", err, tt.err)
			}
			if ok != (tt.user != "") || u.Name != tt.user || u.UID != tt.uid {
				t.Errorf("= %+v, %v; want user %q uid %q", u, ok, tt.user, tt.uid)
			}
			if tt.err && !strings.Contains(err.Error(), "invalid bearer token") {
				t.Errorf("error = %v, want invalid bearer token", err)
			}
		})
	}
}

// TestBearerTokensWithoutTokenFile checks that a bad bearer token is a 401
// when the ServiceAccount authenticator is the only token authenticator.
func TestBearerTokensWithoutTokenFile(t *testing.T) {
	t.Parallel()
	sec := testSecurity(t, false)
	for _, h := range []string{
		"Bearer garbage",
		"bearer garbage",
		"Bearer eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2V4YW1wbGUuY29tIn0.c2ln", // another issuer's JWT
	} {
		r := httptest.NewRequest(http.MethodGet, "/api", nil)
		r.Header.Set("Authorization", h)
		if u, ok, err := sec.authn.Authenticate(r); ok || err == nil || err.Error() != "invalid bearer token" {
			t.Errorf("%q: = %+v, %v, %v; want invalid bearer token", h, u, ok, err)
		}
	}
	for _, h := range []string{"", "Bearer ", "Basic YWxpY2U6cHc="} {
		r := httptest.NewRequest(http.MethodGet, "/api", nil)
		r.Header.Set("Authorization", h)
		if u, ok, err := sec.authn.Authenticate(r); ok || err != nil {
			t.Errorf("%q: = %+v, %v, %v; want no credential", h, u, ok, err)
		}
	}
	_, _, ok, err := sec.reviewer.AuthenticateTokenAudiences(context.Background(), "garbage", nil)
	if ok || err == nil || err.Error() != "invalid bearer token" {
		t.Errorf("token review of garbage: %v, %v; want invalid bearer token", ok, err)
	}
}

// TestTokenReviewerRunsStaticTokens checks that TokenReview sees the
// static tokens, audience-agnostic: valid for the API server's audiences
// only, as upstream's WrapAudienceAgnosticToken.
func TestTokenReviewerRunsStaticTokens(t *testing.T) {
	t.Parallel()
	sec := testSecurity(t, true)
	tests := []struct {
		name      string
		token     string
		audiences []string
		ok        bool
		matched   []string
		err       string
	}{
		{name: "API audiences", token: "static-token", ok: true, matched: []string{serviceaccount.DefaultIssuer}},
		{name: "API audience requested", token: "static-token", audiences: []string{"vault", serviceaccount.DefaultIssuer}, ok: true, matched: []string{serviceaccount.DefaultIssuer}},
		{name: "other audiences", token: "static-token", audiences: []string{"vault"}, err: "invalid bearer token"},
		{name: "unknown token", token: "garbage", err: "invalid bearer token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u, matched, ok, err := sec.reviewer.AuthenticateTokenAudiences(context.Background(), tt.token, tt.audiences)
			if ok != tt.ok || !slices.Equal(matched, tt.matched) {
				t.Errorf("= %+v, %v, %v; want ok %v matched %v", u, matched, ok, tt.ok, tt.matched)
			}
			if ok && (u.Name != "alice" || u.UID != "alice-uid" || !slices.Equal(u.Groups, []string{"dev", "ops"})) {
				t.Errorf("user = %+v", u)
			}
			if (err == nil) != (tt.err == "") || (err != nil && err.Error() != tt.err) {
				t.Errorf("error = %v, want %q", err, tt.err)
			}
		})
	}
}

// TestIssuerWithoutDiscovery: an issuer that is no https URL, which
// upstream accepts, starts the server with working tokens and without the
// OIDC discovery documents; an https issuer serves them.
func TestIssuerWithoutDiscovery(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		issuer string
		mounts int
	}{{"api", 0}, {"http://issuer.example", 0}, {"https://issuer.example", 1}} {
		o := Options{PKIDir: t.TempDir()}
		o.Auth.ServiceAccountIssuer = tt.issuer
		sec, err := newSecurity(o, nil, nil, nil, nil)
		if err != nil {
			t.Fatalf("issuer %q: %v", tt.issuer, err)
		}
		if len(sec.mounts) != tt.mounts {
			t.Errorf("issuer %q: %d discovery mounts, want %d", tt.issuer, len(sec.mounts), tt.mounts)
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "team", UID: "robot-uid"}}
		tr, err := sec.issuer.TokenRequest(context.Background(), sa, &authnv1.TokenRequest{}, nil)
		if err != nil || tr.Status.Token == "" {
			t.Errorf("issuer %q: no token: %v", tt.issuer, err)
		}
	}
}

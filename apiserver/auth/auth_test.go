package auth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// tokenFunc adapts a function to TokenAuthenticator.
type tokenFunc func(token string, audiences []string) (User, []string, bool, error)

func (f tokenFunc) AuthenticateTokenAudiences(_ context.Context, token string, audiences []string) (User, []string, bool, error) {
	return f(token, audiences)
}

// knows accepts token as user, refuses "refused" with err, and does not
// know other tokens.
func knows(token, user string, err error) tokenFunc {
	return func(tok string, audiences []string) (User, []string, bool, error) {
		switch tok {
		case token:
			return User{Name: user}, audiences, true, nil
		case "refused":
			return User{}, nil, false, err
		}
		return User{}, nil, false, nil
	}
}

func TestBearer(t *testing.T) {
	t.Parallel()
	expired := errors.New("token has expired")
	b := Bearer{Tokens: TokenUnion{knows("a", "alice", nil), knows("b", "bob", expired)}}
	tests := []struct {
		name   string
		header string // "-": none
		user   string // "": not authenticated
		err    string
	}{
		{name: "first authenticator", header: "Bearer a", user: "alice"},
		{name: "second authenticator", header: "Bearer b", user: "bob"},
		{name: "lower-case scheme", header: "bearer a", user: "alice"},
		{name: "mixed-case scheme", header: "bEaReR b", user: "bob"},
		{name: "surrounding space", header: " Bearer a\t", user: "alice"},
		{name: "words after the token", header: "Bearer a b", user: "alice"},
		{name: "unknown token", header: "Bearer c", err: "invalid bearer token"},
		{name: "refused", header: "Bearer refused", err: "token has expired"},
		{name: "no header", header: "-"},
		{name: "empty header", header: ""},
		{name: "scheme only", header: "Bearer"},
		{name: "empty token", header: "Bearer "},
		{name: "space before the token", header: "Bearer  a"},
		{name: "other scheme", header: "Basic YTpi"},
		{name: "no space after the scheme", header: "Bearera"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodGet, "/api", nil)
			if tt.header != "-" {
				r.Header.Set("Authorization", tt.header)
			}
			u, ok, err := b.Authenticate(r)
			if ok != (tt.user != "") || u.Name != tt.user {
				t.Errorf("= %+v, %v; want user %q", u, ok, tt.user)
			}
			if (err == nil) != (tt.err == "") || (err != nil && err.Error() != tt.err) {
				t.Errorf("error = %v, want %q", err, tt.err)
			}
			if ok && r.Header.Get("Authorization") != "" {
				t.Error("the token stayed in the request after authentication")
			}
		})
	}
	if _, _, _, err := (Bearer{}).AuthenticateTokenAudiences(context.Background(), "a", nil); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("no token authenticators: error %v, want ErrInvalidToken", err)
	}
}

func TestTokenUnion(t *testing.T) {
	t.Parallel()
	e1, e2 := errors.New("bad signature"), errors.New("token has expired")
	tests := []struct {
		name  string
		union TokenUnion
		token string
		user  string
		err   string
	}{
		{"first accepts", TokenUnion{knows("t", "alice", nil), knows("t", "bob", nil)}, "t", "alice", ""},
		{"a refusal does not stop the others", TokenUnion{knows("x", "alice", e1), knows("refused", "bob", nil)}, "refused", "bob", ""},
		{"nobody knows it", TokenUnion{knows("x", "alice", nil), knows("y", "bob", nil)}, "t", "", ""},
		{"one refusal", TokenUnion{knows("x", "alice", nil), knows("y", "bob", e1)}, "refused", "", "bad signature"},
		{"two refusals", TokenUnion{knows("x", "alice", e1), knows("y", "bob", e2)}, "refused", "", "[bad signature, token has expired]"},
		{"empty", nil, "t", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u, _, ok, err := tt.union.AuthenticateTokenAudiences(context.Background(), tt.token, nil)
			if ok != (tt.user != "") || u.Name != tt.user {
				t.Errorf("= %+v, %v; want user %q", u, ok, tt.user)
			}
			if (err == nil) != (tt.err == "") || (err != nil && err.Error() != tt.err) {
				t.Errorf("error = %v, want %q", err, tt.err)
			}
		})
	}
	_, _, _, err := TokenUnion{knows("x", "alice", e1), knows("y", "bob", e2)}.AuthenticateTokenAudiences(context.Background(), "refused", nil)
	if !errors.Is(err, e1) || !errors.Is(err, e2) {
		t.Errorf("aggregate %v does not hold both refusals", err)
	}
}

func TestAudienceAgnostic(t *testing.T) {
	t.Parallel()
	toks := Tokens{"static": {Name: "alice", UID: "1001"}}
	api := []string{"https://kubernetes.default.svc", "api"}
	tests := []struct {
		name      string
		api       []string
		token     string
		requested []string
		ok        bool
		matched   []string
	}{
		{"API audiences", api, "static", nil, true, api},
		{"one API audience requested", api, "static", []string{"vault", "api"}, true, []string{"api"}},
		{"other audiences", api, "static", []string{"vault"}, false, nil},
		{"unknown token", api, "nope", nil, false, nil},
		{"no API audiences", nil, "static", nil, true, nil},
		{"no API audiences, audiences requested", nil, "static", []string{"api"}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := AudienceAgnostic{APIAudiences: tt.api, Tokens: toks}
			u, matched, ok, err := a.AuthenticateTokenAudiences(context.Background(), tt.token, tt.requested)
			if err != nil || ok != tt.ok || !slices.Equal(matched, tt.matched) {
				t.Fatalf("= %+v, %v, %v, %v; want ok %v matched %v", u, matched, ok, err, tt.ok, tt.matched)
			}
			if ok && (u.Name != "alice" || u.UID != "1001") {
				t.Errorf("user = %+v", u)
			}
		})
	}
}

func TestSplitServiceAccountUser(t *testing.T) {
	t.Parallel()
	tests := []struct {
		user     string
		ns, name string
		ok       bool
	}{
		{"system:serviceaccount:default:robot", "default", "robot", true},
		{"system:serviceaccount:kube-system:a.b-c", "kube-system", "a.b-c", true},
		{"alice", "", "", false},
		{"system:serviceaccount:default", "", "", false},
		{"system:serviceaccount::robot", "", "", false},
		{"system:serviceaccount:default:", "", "", false},
		{"system:serviceaccount:default:a:b", "", "", false},
		// Names that no namespace or account can have, as upstream's
		// SplitUsername refuses them: impersonating one asks for a user.
		{"system:serviceaccount:Default:robot", "", "", false},
		{"system:serviceaccount:a.b:robot", "", "", false},
		{"system:serviceaccount:default:Robot", "", "", false},
		{"system:serviceaccount:default:robot_1", "", "", false},
	}
	for _, tt := range tests {
		ns, name, ok := SplitServiceAccountUser(tt.user)
		if ns != tt.ns || name != tt.name || ok != tt.ok {
			t.Errorf("SplitServiceAccountUser(%q) = %q %q %v, want %q %q %v", tt.user, ns, name, ok, tt.ns, tt.name, tt.ok)
		}
	}
}

// TestWithAuthenticated: system:authenticated is added once, and not to
// the anonymous user nor to a user whose credential names
// system:unauthenticated, as upstream's AuthenticatedGroupAdder.
func TestWithAuthenticated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   User
		want []string
	}{
		{User{Name: "alice", Groups: []string{"dev"}}, []string{"dev", AllAuthenticated}},
		{User{Name: "alice"}, []string{AllAuthenticated}},
		{User{Name: "alice", Groups: []string{AllAuthenticated, "dev"}}, []string{AllAuthenticated, "dev"}},
		{User{Name: "odd", Groups: []string{AllUnauthenticated}}, []string{AllUnauthenticated}},
		{Anonymous, []string{AllUnauthenticated}},
	} {
		if got := tc.in.WithAuthenticated().Groups; !slices.Equal(got, tc.want) {
			t.Errorf("%s %v: groups %v, want %v", tc.in.Name, tc.in.Groups, got, tc.want)
		}
	}
}

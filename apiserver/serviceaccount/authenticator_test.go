package serviceaccount

import (
	"context"
	"crypto/rsa"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// authenticate authenticates token for the API server's audiences.
func (f *fixture) authenticate(token string) (auth.User, bool, error) {
	return f.authn.AuthenticateToken(context.Background(), token)
}

func TestAuthenticateRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		bound metav1.Object
		extra map[string][]string // besides the credential id
	}{
		{"unbound", nil, map[string][]string{}},
		{"pod", newPod(), map[string][]string{
			"authentication.kubernetes.io/pod-name": {"web-0"}, "authentication.kubernetes.io/pod-uid": {"pod-uid-1"},
			"authentication.kubernetes.io/node-name": {"n1"}, "authentication.kubernetes.io/node-uid": {"node-uid-1"},
		}},
		{"secret", newSecret(), map[string][]string{}},
		{"node", newNode(), map[string][]string{
			"authentication.kubernetes.io/node-name": {"n1"}, "authentication.kubernetes.io/node-uid": {"node-uid-1"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 0)
			tok := f.token(t, tt.bound)
			u, ok, err := f.authenticate(tok)
			if err != nil || !ok {
				t.Fatalf("Authenticate = %v, %v", ok, err)
			}
			jti := decodeSegment(t, tok, 1)["jti"].(string)
			tt.extra["authentication.kubernetes.io/credential-id"] = []string{"JTI=" + jti}
			want := auth.User{
				Name: "system:serviceaccount:team:robot", UID: "sa-uid-1",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team"},
				Extra:  tt.extra,
			}
			if !reflect.DeepEqual(u, want) {
				t.Errorf("user = %+v\nwant %+v", u, want)
			}
		})
	}
}

// foreignToken signs claims with key, as another issuer or an attacker
// would.
func foreignToken(t *testing.T, key *rsa.PrivateKey, kid string, claims ...any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := jwt.Signed(signer)
	for _, c := range claims {
		b = b.Claims(c)
	}
	tok, err := b.Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestAuthenticateRejects(t *testing.T) {
	t.Parallel()
	ourKID, err := keyID(&testKey(t, 0).PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		// token returns the bearer token, changing the fixture first if
		// the case needs it.
		token func(t *testing.T, f *fixture) string
		err   string // "" for ok false without error: not our token
	}{
		{name: "not a JWT", token: func(*testing.T, *fixture) string { return "0123456789abcdef" }},
		{name: "another issuer", token: func(t *testing.T, f *fixture) string {
			return foreignToken(t, testKey(t, 1), "other", jwt.Claims{Issuer: "https://accounts.example.com", Subject: "x"})
		}},
		{name: "signed by another key", err: "invalid signature, no keys found", token: func(t *testing.T, f *fixture) string {
			other, err := NewIssuer(IssuerConfig{Key: testKey(t, 1), Now: f.clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			out, err := other.TokenRequest(context.Background(), newSA(), &authnv1.TokenRequest{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return out.Status.Token
		}},
		{name: "another key claiming our kid", err: "invalid signature", token: func(t *testing.T, f *fixture) string {
			return foreignToken(t, testKey(t, 1), ourKID, jwt.Claims{Issuer: DefaultIssuer, Subject: "x"})
		}},
		{name: "tampered payload", err: "invalid signature", token: func(t *testing.T, f *fixture) string {
			parts := strings.Split(f.token(t, nil), ".")
			evil := strings.Split(foreignToken(t, testKey(t, 1), ourKID, jwt.Claims{Issuer: DefaultIssuer, Subject: "x"}), ".")
			return parts[0] + "." + evil[1] + "." + parts[2]
		}},
		{name: "expired", err: "service account token has expired", token: func(t *testing.T, f *fixture) string {
			tok := f.token(t, nil)
			f.clock.Step(time.Hour + 2*time.Minute) // past exp and the minute of leeway
			return tok
		}},
		{name: "not valid yet", err: "service account token is not valid yet", token: func(t *testing.T, f *fixture) string {
			tok := f.token(t, nil)
			f.clock.Step(-5 * time.Minute)
			return tok
		}},
		{name: "wrong audience", err: "token audiences", token: func(t *testing.T, f *fixture) string {
			return f.token(t, nil, "vault")
		}},
		{name: "service account deleted", err: `serviceaccounts "robot" not found`, token: func(t *testing.T, f *fixture) string {
			tok := f.token(t, nil)
			f.getter.remove(newSA())
			return tok
		}},
		{name: "service account recreated", err: "service account UID (sa-uid-2) does not match claim (sa-uid-1)", token: func(t *testing.T, f *fixture) string {
			tok := f.token(t, nil)
			sa := newSA()
			sa.UID = "sa-uid-2"
			f.getter.put(sa)
			return tok
		}},
		{name: "service account being deleted", err: "service account team/robot has been deleted", token: func(t *testing.T, f *fixture) string {
			tok := f.token(t, nil)
			sa := newSA()
			sa.DeletionTimestamp = &metav1.Time{Time: f.clock.Now().Add(-2 * time.Minute)}
			f.getter.put(sa)
			return tok
		}},
		{name: "bound pod deleted", err: "service account token has been invalidated", token: func(t *testing.T, f *fixture) string {
			tok := f.token(t, newPod())
			f.getter.remove(newPod())
			return tok
		}},
		{name: "bound pod recreated", err: "pod UID (pod-uid-2) does not match service account pod ref claim (pod-uid-1)", token: func(t *testing.T, f *fixture) string {
			tok := f.token(t, newPod())
			p := newPod()
			p.UID = "pod-uid-2"
			f.getter.put(p)
			return tok
		}},
		{name: "bound pod deleted over a minute ago", err: "service account token has been invalidated", token: func(t *testing.T, f *fixture) string {
			tok := f.token(t, newPod())
			p := newPod()
			p.DeletionTimestamp = &metav1.Time{Time: f.clock.Now().Add(-61 * time.Second)}
			f.getter.put(p)
			return tok
		}},
		{name: "bound secret deleted", err: "service account token has been invalidated", token: func(t *testing.T, f *fixture) string {
			tok := f.token(t, newSecret())
			f.getter.remove(newSecret())
			return tok
		}},
		{name: "bound node deleted", err: "service account token has been invalidated", token: func(t *testing.T, f *fixture) string {
			tok := f.token(t, newNode())
			f.getter.remove(newNode())
			return tok
		}},
		{name: "bound node recreated", err: "node UID (node-uid-2) does not match", token: func(t *testing.T, f *fixture) string {
			tok := f.token(t, newNode())
			n := newNode()
			n.UID = "node-uid-2"
			f.getter.put(n)
			return tok
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 0)
			tok := tt.token(t, f)
			u, ok, err := f.authenticate(tok)
			if ok {
				t.Fatalf("authenticated as %+v", u)
			}
			if tt.err == "" {
				if err != nil {
					t.Errorf("error = %v, want none (not our token)", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("error = %v, want ErrInvalidToken with %q", err, tt.err)
			}
			if parts := strings.Split(tok, "."); len(parts) == 3 && strings.Contains(err.Error(), parts[1]) {
				t.Error("error carries the token")
			}
		})
	}
}

// TestBearer checks the authenticator behind auth.Bearer, as the server
// has it: a token that is not ours is refused (a 401), not anonymous, and
// a refusal of ours keeps its reason.
func TestBearer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	b := auth.Bearer{Tokens: f.authn}
	tests := []struct {
		name   string
		header string
		ok     bool
		err    error // nil: none
	}{
		{"valid", "Bearer " + f.token(t, nil), true, nil},
		{"lower-case scheme", "bearer " + f.token(t, nil), true, nil},
		{"not a JWT", "Bearer 0123456789abcdef", false, auth.ErrInvalidToken},
		{"another issuer", "Bearer " + foreignToken(t, testKey(t, 1), "other", jwt.Claims{Issuer: "https://accounts.example.com", Subject: "x"}), false, auth.ErrInvalidToken},
		{"wrong audience", "Bearer " + f.token(t, nil, "vault"), false, ErrInvalidToken},
		{"no header", "", false, nil},
		{"basic auth", "Basic dXNlcjpwYXNz", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodGet, "/api", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			u, ok, err := b.Authenticate(r)
			if ok != tt.ok || !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("= %+v, %v, %v; want ok %v error %v", u, ok, err, tt.ok, tt.err)
			}
			if ok && u.Name != "system:serviceaccount:team:robot" {
				t.Errorf("user = %+v", u)
			}
		})
	}
}

func TestTerminatingPodKeepsToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t, -1)
	tok := f.token(t, newPod())
	p := newPod()
	p.DeletionTimestamp = &metav1.Time{Time: f.clock.Now().Add(30 * time.Second)} // graceful deletion
	f.getter.put(p)
	if _, ok, err := f.authenticate(tok); !ok || err != nil {
		t.Fatalf("during graceful termination: %v, %v", ok, err)
	}
	f.clock.Step(91 * time.Second) // a minute past the deletion timestamp
	if _, ok, err := f.authenticate(tok); ok || !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("after termination: %v, %v", ok, err)
	}
}

func TestAuthenticateTokenAudiences(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	tok := f.token(t, nil, "vault", DefaultIssuer)
	tests := []struct {
		name      string
		requested []string
		matched   []string
		err       bool
	}{
		{"API audiences", nil, []string{DefaultIssuer}, false},
		{"one of several", []string{"vault", "consul"}, []string{"vault"}, false},
		{"both", []string{DefaultIssuer, "vault"}, []string{DefaultIssuer, "vault"}, false},
		{"none shared", []string{"consul"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, matched, ok, err := f.authn.AuthenticateTokenAudiences(context.Background(), tok, tt.requested)
			if tt.err {
				if ok || !errors.Is(err, ErrInvalidToken) {
					t.Errorf("= %v, %v; want an invalid token error", ok, err)
				}
				return
			}
			if !ok || err != nil || u.Name != "system:serviceaccount:team:robot" {
				t.Fatalf("= %+v, %v, %v", u, ok, err)
			}
			slices.Sort(matched)
			if !slices.Equal(matched, tt.matched) {
				t.Errorf("matched %v, want %v", matched, tt.matched)
			}
		})
	}
	// AuthenticateToken is for the API server's audiences.
	if _, ok, err := f.authn.AuthenticateToken(context.Background(), f.token(t, nil, "vault")); ok || err == nil {
		t.Errorf("a token for vault authenticated to the API server: %v, %v", ok, err)
	}
}

func TestCache(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	tok := f.token(t, newPod())
	u1, ok, err := f.authenticate(tok)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	lookups := f.getter.count()
	u1.Groups[0] = "changed by the caller"
	u2, ok, err := f.authenticate(tok)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	if f.getter.count() != lookups {
		t.Errorf("a cached token was looked up again")
	}
	if u2.Groups[0] != auth.ServiceAccountsGroup {
		t.Errorf("cached user shared with a caller: groups %v", u2.Groups)
	}
	// Other audiences are another cache entry.
	if _, _, ok, err := f.authn.AuthenticateTokenAudiences(context.Background(), tok, []string{"vault"}); ok || err == nil {
		t.Errorf("cache answered for other audiences: %v, %v", ok, err)
	}

	// Deleting the pod takes effect when the entry expires.
	f.getter.remove(newPod())
	if _, ok, _ := f.authenticate(tok); !ok {
		t.Errorf("cached token refused before the TTL")
	}
	f.clock.Step(defaultCacheTTL + time.Second)
	if _, ok, err := f.authenticate(tok); ok || !errors.Is(err, ErrInvalidToken) {
		t.Errorf("token of a deleted pod after the TTL: %v, %v", ok, err)
	}
	if f.getter.count() == lookups {
		t.Errorf("no lookup after the TTL")
	}
}

func TestCacheNotPastExpiry(t *testing.T) {
	t.Parallel()
	c := newClock()
	tc := newTokenCache(2, time.Minute, c.Now)
	k := newCacheKey("token", []string{"api"})
	tc.add(k, cachedResult{user: auth.User{Name: "u"}}, 0)
	if _, ok := tc.get(k); ok {
		t.Error("expired token cached")
	}
	tc.add(k, cachedResult{user: auth.User{Name: "u"}}, 5*time.Second)
	c.Step(6 * time.Second)
	if _, ok := tc.get(k); ok {
		t.Error("token cached past its expiry")
	}
	if newCacheKey("ab", []string{"c"}) == newCacheKey("b", []string{"ca"}) {
		t.Error("cache keys collide across the audience/token boundary")
	}
}

func TestNewAuthenticatorErrors(t *testing.T) {
	t.Parallel()
	key := []*rsa.PublicKey{&testKey(t, 0).PublicKey}
	for name, cfg := range map[string]AuthenticatorConfig{
		"no keys":       {Getter: newFakeGetter()},
		"nil key":       {PublicKeys: []*rsa.PublicKey{nil}, Getter: newFakeGetter()},
		"no getter":     {PublicKeys: key},
		"negative size": {PublicKeys: key, Getter: newFakeGetter(), CacheSize: -1},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := NewAuthenticator(cfg); err == nil {
				t.Error("NewAuthenticator succeeded")
			}
		})
	}
}

func BenchmarkAuthenticate(b *testing.B) {
	for _, bc := range []struct {
		name string
		ttl  time.Duration
	}{{"cached", 0}, {"uncached", -1}} {
		b.Run(bc.name, func(b *testing.B) {
			f := newFixture(b, bc.ttl)
			tok := f.token(b, newPod())
			b.ReportAllocs()
			for b.Loop() {
				if _, ok, err := f.authenticate(tok); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

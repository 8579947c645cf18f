package serviceaccount

import (
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

func serve(t *testing.T, h http.Handler, method string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, "/", nil))
	return w
}

func TestDiscovery(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 0)
	keys := []*rsa.PublicKey{&testKey(t, 0).PublicKey, &testKey(t, 1).PublicKey}
	cfgH, jwksH, err := DiscoveryHandlers(DiscoveryConfig{Issuer: DefaultIssuer, Keys: keys, ExternalAddress: func() string { return "10.0.0.1:6443" }})
	if err != nil {
		t.Fatal(err)
	}

	w := serve(t, cfgH, http.MethodGet)
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Cache-Control") != "public, max-age=3600" {
		t.Errorf("config: %d %v", w.Code, w.Header())
	}
	var cfg map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &cfg); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"issuer":                                DefaultIssuer,
		"jwks_uri":                              "https://10.0.0.1:6443/openid/v1/jwks",
		"response_types_supported":              []any{"id_token"},
		"subject_types_supported":               []any{"public"},
		"id_token_signing_alg_values_supported": []any{"RS256"},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config = %v\nwant %v", cfg, want)
	}

	w = serve(t, jwksH, http.MethodGet)
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/jwk-set+json" || w.Header().Get("Cache-Control") != "public, max-age=3600" {
		t.Errorf("jwks: %d %v", w.Code, w.Header())
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(w.Body.Bytes(), &set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 2 {
		t.Fatalf("jwks has %d keys", len(set.Keys))
	}
	for _, k := range set.Keys {
		if !k.IsPublic() || k.Use != "sig" || k.Algorithm != "RS256" {
			t.Errorf("key %s: public %v use %q alg %q", k.KeyID, k.IsPublic(), k.Use, k.Algorithm)
		}
	}

	// A relying party verifies a token with the key its kid names.
	tok, err := jwt.ParseSigned(f.token(t, nil), []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	found := set.Key(tok.Headers[0].KeyID)
	if len(found) != 1 {
		t.Fatalf("jwks has %d keys for kid %q", len(found), tok.Headers[0].KeyID)
	}
	var claims jwt.Claims
	if err := tok.Claims(found[0].Key, &claims); err != nil {
		t.Fatalf("verifying with the published key: %v", err)
	}
	if claims.Issuer != cfg["issuer"] {
		t.Errorf("token issuer %q, discovery issuer %v", claims.Issuer, cfg["issuer"])
	}

	if w := serve(t, jwksH, http.MethodHead); w.Code != http.StatusOK || w.Body.Len() != 0 {
		t.Errorf("HEAD: %d with %d bytes", w.Code, w.Body.Len())
	}
	if w := serve(t, cfgH, http.MethodPost); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", w.Code)
	}
}

func TestDiscoveryErrors(t *testing.T) {
	t.Parallel()
	keys := []*rsa.PublicKey{&testKey(t, 0).PublicKey}
	external := func() string { return "10.0.0.1:6443" }
	tests := []struct {
		name     string
		issuer   string
		keys     []*rsa.PublicKey
		jwksURI  string
		external func() string
	}{
		{"http issuer", "http://kubernetes.default.svc", keys, "", external},
		{"query", "https://kubernetes.default.svc?x=1", keys, "", external},
		{"fragment", "https://kubernetes.default.svc#x", keys, "", external},
		{"not a URL", "https://[::1", keys, "", external},
		{"no keys", DefaultIssuer, nil, "", external},
		{"nil key", DefaultIssuer, []*rsa.PublicKey{nil}, "", external},
		{"neither JWKS URI nor external address", DefaultIssuer, keys, "", nil},
		{"http JWKS URI", DefaultIssuer, keys, "http://keys.example/jwks", external},
		{"JWKS URI that is no URL", DefaultIssuer, keys, "https://[::1", external},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := DiscoveryHandlers(DiscoveryConfig{Issuer: tt.issuer, Keys: tt.keys, JWKSURI: tt.jwksURI, ExternalAddress: tt.external}); err == nil {
				t.Error("DiscoveryHandlers succeeded")
			}
		})
	}
}

// A --service-account-jwks-uri is published as given.
func TestDiscoveryJWKSURI(t *testing.T) {
	t.Parallel()
	keys := []*rsa.PublicKey{&testKey(t, 0).PublicKey}
	cfgH, _, err := DiscoveryHandlers(DiscoveryConfig{Issuer: "https://issuer.example", JWKSURI: "https://keys.example/cluster/jwks", Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	w := serve(t, cfgH, http.MethodGet)
	var cfg map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg["jwks_uri"] != "https://keys.example/cluster/jwks" || cfg["issuer"] != "https://issuer.example" {
		t.Errorf("configuration = %v", cfg)
	}
}

// Until the external address is known the configuration is not served,
// nor remembered.
func TestDiscoveryExternalAddressLater(t *testing.T) {
	t.Parallel()
	keys := []*rsa.PublicKey{&testKey(t, 0).PublicKey}
	var addr string
	cfgH, _, err := DiscoveryHandlers(DiscoveryConfig{Issuer: DefaultIssuer, Keys: keys, ExternalAddress: func() string { return addr }})
	if err != nil {
		t.Fatal(err)
	}
	if w := serve(t, cfgH, http.MethodGet); w.Code != http.StatusInternalServerError {
		t.Fatalf("before the address is known: %d %s, want 500", w.Code, w.Body)
	}
	addr = "127.0.0.1:6443"
	w := serve(t, cfgH, http.MethodGet)
	var cfg map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &cfg); err != nil || cfg["jwks_uri"] != "https://127.0.0.1:6443/openid/v1/jwks" {
		t.Fatalf("once known: %d %s (%v)", w.Code, w.Body, err)
	}
}

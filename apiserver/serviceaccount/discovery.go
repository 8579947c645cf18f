package serviceaccount

import (
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"

	"github.com/go-jose/go-jose/v4"
)

// Paths of the service account issuer's discovery documents.
const (
	OpenIDConfigPath = "/.well-known/openid-configuration"
	JWKSPath         = "/openid/v1/jwks"
)

// Response headers of the discovery documents, as upstream's.
const (
	discoveryCacheControl = "public, max-age=3600"
	jwksContentType       = "application/jwk-set+json"
)

// openIDMetadata is the subset of OIDC provider metadata upstream serves:
// enough for relying parties to verify tokens, nothing for login flows.
type openIDMetadata struct {
	Issuer        string   `json:"issuer"`
	JWKSURI       string   `json:"jwks_uri"`
	ResponseTypes []string `json:"response_types_supported"`
	SubjectTypes  []string `json:"subject_types_supported"`
	SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
}

// DiscoveryConfig is what the discovery documents publish.
type DiscoveryConfig struct {
	// Issuer is the iss of the tokens: an https URL without query or
	// fragment, as OIDC requires.
	Issuer string
	// JWKSURI is the key set's address in the configuration (jwks_uri), as
	// upstream's --service-account-jwks-uri; when empty it is
	// https://<ExternalAddress()>/openid/v1/jwks, as upstream derives it
	// from the API server's external address.
	JWKSURI string
	// ExternalAddress gives this API server's host:port as its clients
	// reach it. It is called at requests for the configuration until it
	// gives one (so it may be set once the server listens); the document
	// is then rendered once.
	ExternalAddress func() string
	// Keys verify the tokens.
	Keys []*rsa.PublicKey
}

// ValidateJWKSURI checks a jwks_uri given in place of the default one: a
// URL with the https scheme, as upstream requires.
func ValidateJWKSURI(uri string) error {
	u, err := url.Parse(uri)
	switch {
	case err != nil:
		return fmt.Errorf("serviceaccount: JWKS URI must be a valid URL: %w", err)
	case u.Scheme != "https":
		return fmt.Errorf("serviceaccount: JWKS URI requires https scheme, parsed as: %s", u)
	}
	return nil
}

// DiscoveryHandlers return the handlers of OpenIDConfigPath and JWKSPath
// for cfg. The key set is rendered at once, the configuration at its first
// request that knows the external address.
func DiscoveryHandlers(cfg DiscoveryConfig) (openIDConfig, jwks http.Handler, err error) {
	u, err := url.Parse(cfg.Issuer)
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("serviceaccount: parsing issuer URL: %w", err)
	case u.Scheme != "https":
		return nil, nil, fmt.Errorf("serviceaccount: issuer URL must use https scheme, got: %s", cfg.Issuer)
	case u.RawQuery != "" || u.ForceQuery:
		return nil, nil, fmt.Errorf("serviceaccount: issuer URL may not include a query, got: %s", cfg.Issuer)
	case u.Fragment != "":
		return nil, nil, fmt.Errorf("serviceaccount: issuer URL may not include a fragment, got: %s", cfg.Issuer)
	case len(cfg.Keys) == 0:
		return nil, nil, errors.New("serviceaccount: no keys provided for validating keyset")
	case cfg.JWKSURI == "" && cfg.ExternalAddress == nil:
		return nil, nil, errors.New("serviceaccount: either the JWKS URI or the external address must be set")
	}
	if cfg.JWKSURI != "" {
		if err := ValidateJWKSURI(cfg.JWKSURI); err != nil {
			return nil, nil, err
		}
	}
	var set jose.JSONWebKeySet
	for i, k := range cfg.Keys {
		if k == nil {
			return nil, nil, fmt.Errorf("serviceaccount: key #%d is nil", i)
		}
		kid, err := keyID(k)
		if err != nil {
			return nil, nil, fmt.Errorf("serviceaccount: key #%d: %w", i, err)
		}
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k, KeyID: kid, Algorithm: string(jose.RS256), Use: "sig"})
	}
	keysJSON, err := json.Marshal(set)
	if err != nil {
		return nil, nil, fmt.Errorf("serviceaccount: marshalling issuer JWKS: %w", err)
	}
	var (
		mu       sync.Mutex
		rendered []byte
	)
	config := func() ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		if rendered != nil {
			return rendered, nil
		}
		jwksURI := cfg.JWKSURI
		if jwksURI == "" {
			host := cfg.ExternalAddress()
			if host == "" {
				return nil, errors.New("the API server's external address is not known yet")
			}
			jwksURI = (&url.URL{Scheme: "https", Host: host, Path: JWKSPath}).String()
		}
		body, err := json.Marshal(openIDMetadata{
			Issuer:        cfg.Issuer,
			JWKSURI:       jwksURI,
			ResponseTypes: []string{"id_token"}, // Kubernetes only produces ID tokens
			SubjectTypes:  []string{"public"},
			SigningAlgs:   []string{string(jose.RS256)},
		})
		if err == nil {
			rendered = body
		}
		return body, err
	}
	return documentFunc(config, "application/json"), document(keysJSON, jwksContentType), nil
}

// document serves body to GET and HEAD requests.
func document(body []byte, contentType string) http.Handler {
	return documentFunc(func() ([]byte, error) { return body, nil }, contentType)
}

// documentFunc serves what body returns to GET and HEAD requests.
func documentFunc(body func() ([]byte, error), contentType string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		b, err := body()
		if err != nil {
			http.Error(w, "rendering the document: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", discoveryCacheControl)
		if r.Method == http.MethodGet {
			_, _ = w.Write(b)
		}
	})
}

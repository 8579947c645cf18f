package serviceaccount

import (
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

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

// DiscoveryHandlers return the handlers of OpenIDConfigPath and JWKSPath
// for issuer, whose tokens keys verify. The documents are rendered once;
// issuer must be an https URL without query or fragment, as OIDC requires.
func DiscoveryHandlers(issuer string, keys []*rsa.PublicKey) (openIDConfig, jwks http.Handler, err error) {
	u, err := url.Parse(issuer)
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("serviceaccount: parsing issuer URL: %w", err)
	case u.Scheme != "https":
		return nil, nil, fmt.Errorf("serviceaccount: issuer URL must use https scheme, got: %s", issuer)
	case u.RawQuery != "" || u.ForceQuery:
		return nil, nil, fmt.Errorf("serviceaccount: issuer URL may not include a query, got: %s", issuer)
	case u.Fragment != "":
		return nil, nil, fmt.Errorf("serviceaccount: issuer URL may not include a fragment, got: %s", issuer)
	case len(keys) == 0:
		return nil, nil, errors.New("serviceaccount: no keys provided for validating keyset")
	}
	var set jose.JSONWebKeySet
	for i, k := range keys {
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
	configJSON, err := json.Marshal(openIDMetadata{
		Issuer:        issuer,
		JWKSURI:       strings.TrimSuffix(issuer, "/") + JWKSPath,
		ResponseTypes: []string{"id_token"}, // Kubernetes only produces ID tokens
		SubjectTypes:  []string{"public"},
		SigningAlgs:   []string{string(jose.RS256)},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("serviceaccount: marshalling issuer metadata: %w", err)
	}
	return document(configJSON, "application/json"), document(keysJSON, jwksContentType), nil
}

// document serves body to GET and HEAD requests.
func document(body []byte, contentType string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", discoveryCacheControl)
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	})
}

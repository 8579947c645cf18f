package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/pki"
	"github.com/kubebus/kubebus/test/harness"
)

// TestIntegrationAuthClientCertificate: the API server asks for a client
// certificate without verifying it in the handshake, as upstream, and its
// authenticator verifies it: a certificate of another CA is a 401 (the
// stock kubectl says "You must be logged in to the server") even where
// anonymous requests are let in, and a bearer token sent beside it still authenticates.
func TestIntegrationAuthClientCertificate(t *testing.T) {
	harness.SkipShort(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("carol-token,carol,1003\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := harness.StartServer(t, "", append([]string{"--token-auth-file", tokens}, apiOnly...)...)
	own, err := pki.Load(filepath.Join(s.Dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	// Another cluster's admin: the same names, system:masters, another CA.
	foreign, err := pki.Ensure(pki.Config{Dir: filepath.Join(dir, "foreign"), Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	client := func(certFile, keyFile string) *http.Client {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: own.CA, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Timeout: 10 * time.Second, Transport: tr}
	}
	bad := client(foreign.AdminCertFile, foreign.AdminKeyFile)
	for _, p := range []string{"/version", "/livez", "/api/v1/secrets", "/api/v1/namespaces/kube-system/secrets"} {
		if code := statusOf(t, bad, http.MethodGet, s.URL+p); code != http.StatusUnauthorized {
			t.Errorf("GET %s with another CA's certificate = %d, want 401", p, code)
		}
	}
	// The client learns only "Unauthorized"; the server's log says why.
	harness.Eventually(t, 5*time.Second, func() error {
		if logs := s.Logs(); !strings.Contains(logs, "unable to authenticate the request") || !strings.Contains(logs, "certificate signed by unknown authority") {
			return errors.New("the server did not log why it refused the certificate")
		}
		return nil
	})
	// Our own CA's certificate is the admin's.
	if code := statusOf(t, client(own.AdminCertFile, own.AdminKeyFile), http.MethodGet, s.URL+"/api/v1/secrets"); code != http.StatusOK {
		t.Errorf("GET secrets with the admin's certificate = %d, want 200", code)
	}

	// A bearer token beside a certificate that does not verify
	// authenticates its user.
	req, err := http.NewRequest(http.MethodPost, s.URL+"/apis/authentication.k8s.io/v1/selfsubjectreviews",
		strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer carol-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := bad.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var review struct {
		Status struct {
			UserInfo struct {
				Username string `json:"username"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &review) != nil || review.Status.UserInfo.Username != "carol" {
		t.Errorf("SelfSubjectReview with a token and another CA's certificate: %d %s, want 201 for carol", resp.StatusCode, body)
	}

	// The stock kubectl with that certificate.
	kubeconfig := filepath.Join(dir, "foreign.kubeconfig")
	if err := pki.WriteKubeconfig(kubeconfig, s.URL, own, foreign.AdminCertFile, foreign.AdminKeyFile); err != nil {
		t.Fatal(err)
	}
	out, err := s.Run(t, harness.Kubectl(t), "", "--kubeconfig", kubeconfig, "get", "pods")
	if err == nil || !strings.Contains(err.Error(), "You must be logged in to the server") {
		t.Errorf("kubectl get pods with another CA's certificate: %v\n%s\nwant a failure asking for credentials", err, out)
	}
}

// TestIntegrationAuthIssuerDiscovery: the ServiceAccount issuer's OIDC
// discovery documents, read by a ServiceAccount as upstream's bootstrap
// policy allows: the configuration names the issuer and, as upstream, a
// jwks_uri at the API server's advertised address (or the one
// --service-account-jwks-uri gives), and that key set verifies a token
// from the TokenRequest API.
func TestIntegrationAuthIssuerDiscovery(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", apiOnly...)
	ctx := context.Background()
	cs := s.Clientset(t)
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "relying-party"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "relying-party", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{Audiences: []string{"vault"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := tr.Status.Token
	// What the ServiceAccount reads with its token (anonymous may not:
	// upstream binds the discovery role to system:serviceaccounts only).
	get := func(url string, auth bool) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth {
			tok, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "relying-party", &authnv1.TokenRequest{}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+tok.Status.Token)
		}
		resp, err := anonymousClient(t, s).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	if code, _ := get(s.URL+"/.well-known/openid-configuration", false); code != http.StatusForbidden {
		t.Errorf("anonymous GET of the configuration = %d, want 403", code)
	}
	code, body := get(s.URL+"/.well-known/openid-configuration", true)
	var cfg struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &cfg) != nil {
		t.Fatalf("configuration: %d %s", code, body)
	}
	// Fatal, so that the test never fetches a jwks_uri that is not this
	// server's.
	if want := s.URL + "/openid/v1/jwks"; cfg.JWKSURI != want || cfg.Issuer != "https://kubernetes.default.svc.cluster.local" {
		t.Fatalf("configuration = %+v, want issuer https://kubernetes.default.svc.cluster.local and jwks_uri %s", cfg, want)
	}
	code, body = get(cfg.JWKSURI, true)
	var set jose.JSONWebKeySet
	if code != http.StatusOK || json.Unmarshal(body, &set) != nil || len(set.Keys) == 0 {
		t.Fatalf("key set: %d %s", code, body)
	}
	jws, err := jose.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	keys := set.Key(jws.Signatures[0].Header.KeyID)
	if len(keys) != 1 {
		t.Fatalf("key set has %d keys for the token's kid %q", len(keys), jws.Signatures[0].Header.KeyID)
	}
	payload, err := jws.Verify(keys[0])
	if err != nil {
		t.Fatalf("the published key does not verify the token: %v", err)
	}
	var claims struct {
		Issuer string   `json:"iss"`
		Aud    []string `json:"aud"`
		Sub    string   `json:"sub"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Issuer != cfg.Issuer || claims.Sub != "system:serviceaccount:default:relying-party" {
		t.Errorf("claims = %+v (%v), want iss %s and the account's subject", claims, err, cfg.Issuer)
	}

	// A jwks_uri given by flag is published as given.
	given := harness.StartServer(t, "", append([]string{"--service-account-jwks-uri", "https://keys.example.test/cluster/jwks"}, apiOnly...)...)
	gcs := given.Clientset(t)
	if _, err := gcs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "relying-party"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := gcs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "relying-party", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, given.URL+"/.well-known/openid-configuration", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok.Status.Token)
	resp, err := anonymousClient(t, given).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &cfg) != nil || cfg.JWKSURI != "https://keys.example.test/cluster/jwks" {
		t.Errorf("configuration with --service-account-jwks-uri: %d %s", resp.StatusCode, body)
	}
}

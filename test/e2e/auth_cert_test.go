package e2e

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

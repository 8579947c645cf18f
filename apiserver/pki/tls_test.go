package pki

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// whoami answers with the user the client certificate names, as the API
// server's authenticator reads it: 401 for one that does not verify.
func whoami(b *Bundle) http.Handler {
	authn := &auth.ClientCert{Roots: b.CA}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok, err := authn.Authenticate(r)
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusUnauthorized)
		case !ok:
			fmt.Fprint(w, "anonymous")
		default:
			fmt.Fprintf(w, "%s|%s", u.Name, strings.Join(u.Groups, ","))
		}
	})
}

// startServer serves whoami over TLS from ServerTLSConfig on 127.0.0.1.
func startServer(t *testing.T, b *Bundle) *httptest.Server {
	t.Helper()
	cfg, err := b.ServerTLSConfig()
	if err != nil {
		t.Fatalf("ServerTLSConfig: %v", err)
	}
	if cfg.MinVersion != tls.VersionTLS12 || cfg.ClientAuth != tls.RequestClientCert {
		t.Fatalf("MinVersion %x ClientAuth %v", cfg.MinVersion, cfg.ClientAuth)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(whoami(b))
	_ = s.Listener.Close()
	s.Listener = ln
	s.TLS = cfg
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func clientFor(t *testing.T, roots *x509.CertPool, certFile, keyFile string) *http.Client {
	t.Helper()
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	tr := &http.Transport{TLSClientConfig: cfg}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func TestTLSHandshake(t *testing.T) {
	t.Parallel()
	b, _ := newBundle(t)
	srv := startServer(t, b)
	other, _ := newBundle(t)
	schedCert, schedKey, err := b.IssueClient("system:kube-scheduler", nil)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		roots    *x509.CertPool
		cert     string
		key      string
		want     string // response body; "" means the request must fail
		wantFail string // part of the error when want is ""
		status   int    // the response's status (200 when 0)
	}{
		{name: "admin", roots: b.CA, cert: b.AdminCertFile, key: b.AdminKeyFile, want: "kubebus-admin|system:masters"},
		{name: "component", roots: b.CA, cert: schedCert, key: schedKey, want: "system:kube-scheduler|"},
		{name: "no client certificate", roots: b.CA, want: "anonymous"},
		// The handshake takes any client certificate; the authenticator
		// refuses one that does not verify with a 401, as upstream.
		{name: "client certificate from another CA", roots: b.CA, cert: other.AdminCertFile, key: other.AdminKeyFile,
			want: "certificate signed by unknown authority", status: http.StatusUnauthorized},
		{name: "client trusts another CA", roots: other.CA, cert: b.AdminCertFile, key: b.AdminKeyFile, wantFail: "certificate signed by unknown authority"},
		{name: "serving certificate is not a client certificate", roots: b.CA, cert: b.ServingCertFile, key: b.ServingKeyFile,
			want: "incompatible key usage", status: http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, err := clientFor(t, tt.roots, tt.cert, tt.key).Get(srv.URL)
			if tt.want == "" {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("request succeeded, want failure")
				}
				if !strings.Contains(err.Error(), tt.wantFail) {
					t.Errorf("error %v, want one containing %q", err, tt.wantFail)
				}
				return
			}
			if err != nil {
				t.Fatalf("GET: %v", err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if tt.status == 0 {
				tt.status = http.StatusOK
			}
			if resp.StatusCode != tt.status {
				t.Errorf("status %d (%q), want %d", resp.StatusCode, body, tt.status)
			}
			if tt.status == http.StatusOK && string(body) != tt.want || !strings.Contains(string(body), tt.want) {
				t.Errorf("server saw %q, want %q", body, tt.want)
			}
			if resp.TLS == nil || len(resp.TLS.VerifiedChains) == 0 {
				t.Fatal("client did not verify the server")
			}
			if err := resp.TLS.VerifiedChains[0][0].VerifyHostname("127.0.0.1"); err != nil {
				t.Error(err)
			}
		})
	}
}

package storage_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubebus/kubebus/apiserver/pki"
	"github.com/kubebus/kubebus/apiserver/storage"
	"github.com/kubebus/kubebus/apiserver/storage/embedded"
	"github.com/kubebus/kubebus/test/harness"
)

// TestIntegrationTLS checks that the store reaches a member that requires
// client certificates with the API server's certificate from the etcd CA,
// and not without one.
func TestIntegrationTLS(t *testing.T) {
	harness.SkipShort(t)
	ctx := context.Background()
	dir := t.TempDir()
	eb, err := pki.EnsureEtcd(pki.EtcdConfig{Dir: filepath.Join(dir, "pki")})
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := embedded.Start(ctx, embedded.Config{Dir: filepath.Join(dir, "etcd"), TLS: &embedded.TLS{
		CertFile: eb.ServerCertFile, KeyFile: eb.ServerKeyFile, ClientCAFile: eb.CAFile,
		PeerCertFile: eb.PeerCertFile, PeerKeyFile: eb.PeerKeyFile, PeerCAFile: eb.CAFile,
		PeerClientCertFile: eb.PeerClientCertFile, PeerClientKeyFile: eb.PeerClientKeyFile,
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)

	s, err := storage.New(storage.Config{Endpoints: []string{etcd.Endpoint},
		CAFile: eb.CAFile, CertFile: eb.APIServerClientCertFile, KeyFile: eb.APIServerClientKeyFile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := s.Create(cctx, "/registry/core/namespaces/tls", []byte("{}"), ""); err != nil {
		t.Fatalf("create over TLS: %v", err)
	}
	got, err := s.Get(cctx, "/registry/core/namespaces/tls")
	if err != nil || string(got.Value) != "{}" {
		t.Fatalf("get over TLS = %q, %v", got.Value, err)
	}

	// The CA alone, without a client certificate, is refused.
	anon, err := storage.New(storage.Config{Endpoints: []string{etcd.Endpoint}, CAFile: eb.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = anon.Close() })
	actx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := anon.Get(actx, "/registry/core/namespaces/tls"); err == nil {
		t.Fatal("a store without a client certificate read from the member")
	}
}

func TestNewRejectsBadTLSFiles(t *testing.T) {
	dir := t.TempDir()
	eb, err := pki.EnsureEtcd(pki.EtcdConfig{Dir: filepath.Join(dir, "pki")})
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.crt")
	garbage := filepath.Join(dir, "garbage.crt")
	if err := os.WriteFile(garbage, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	const https = "https://127.0.0.1:2379"
	cases := []struct {
		name string
		cfg  storage.Config
		want string // in the error
	}{
		{"missing CA", storage.Config{Endpoints: []string{https}, CAFile: missing}, missing},
		{"garbage CA", storage.Config{Endpoints: []string{https}, CAFile: garbage}, garbage},
		{"missing cert", storage.Config{Endpoints: []string{https}, CertFile: missing, KeyFile: eb.APIServerClientKeyFile}, missing},
		{"mismatched key", storage.Config{Endpoints: []string{https}, CertFile: eb.APIServerClientCertFile, KeyFile: eb.ServerKeyFile}, eb.APIServerClientCertFile},
		{"cert without key", storage.Config{Endpoints: []string{https}, CertFile: eb.APIServerClientCertFile}, "both"},
		{"http endpoint", storage.Config{Endpoints: []string{https, "http://127.0.0.1:2379"}, CAFile: eb.CAFile}, "http://127.0.0.1:2379"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := storage.New(tc.cfg)
			if err == nil {
				_ = s.Close()
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %q", err, tc.want)
			}
		})
	}
}

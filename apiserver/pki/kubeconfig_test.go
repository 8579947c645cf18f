package pki

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebus/kubebus/test/prereq"
)

func TestWriteKubeconfig(t *testing.T) {
	t.Parallel()
	b, cfg := newBundle(t)
	srv := startServer(t, b)
	schedCert, schedKey, err := b.IssueClient("system:kube-scheduler", nil)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		cert, key string
		wantUser  string
	}{
		{name: "admin", cert: b.AdminCertFile, key: b.AdminKeyFile, wantUser: "kubebus-admin|system:masters"},
		{name: "admin by default", wantUser: "kubebus-admin|system:masters"},
		{name: "component", cert: schedCert, key: schedKey, wantUser: "system:kube-scheduler|"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(filepath.Dir(cfg.Dir), strings.ReplaceAll(tt.name, " ", "-"), "kubeconfig")
			if err := WriteKubeconfig(path, srv.URL, b, tt.cert, tt.key); err != nil {
				t.Fatalf("WriteKubeconfig: %v", err)
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm() != 0o600 {
				t.Errorf("kubeconfig mode %v, want 0600", info.Mode().Perm())
			}

			kc, err := clientcmd.LoadFromFile(path)
			if err != nil {
				t.Fatalf("LoadFromFile: %v", err)
			}
			ctx := kc.Contexts[kc.CurrentContext]
			if kc.CurrentContext != "kubebus" || ctx == nil || ctx.Cluster != "kubebus" || ctx.AuthInfo != "kubebus-admin" {
				t.Fatalf("current context %q = %+v", kc.CurrentContext, ctx)
			}
			caPEM := contents2(t, b.CAFile)
			if cl := kc.Clusters["kubebus"]; cl == nil || cl.Server != srv.URL || !bytes.Equal(cl.CertificateAuthorityData, caPEM) || cl.InsecureSkipTLSVerify {
				t.Fatalf("cluster %+v", cl)
			}

			rc, err := clientcmd.BuildConfigFromFlags("", path)
			if err != nil {
				t.Fatalf("BuildConfigFromFlags: %v", err)
			}
			if rc.Insecure || rc.Host != srv.URL || !bytes.Equal(rc.CAData, caPEM) || len(rc.CertData) == 0 || len(rc.KeyData) == 0 {
				t.Fatalf("rest.Config host %q insecure %v CA %d cert %d key %d bytes",
					rc.Host, rc.Insecure, len(rc.CAData), len(rc.CertData), len(rc.KeyData))
			}
			hc, err := rest.HTTPClientFor(rc)
			if err != nil {
				t.Fatalf("HTTPClientFor: %v", err)
			}
			resp, err := hc.Get(srv.URL + "/whoami")
			if err != nil {
				t.Fatalf("GET: %v", err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if string(body) != tt.wantUser {
				t.Errorf("server saw %q, want %q", body, tt.wantUser)
			}
			if resp.TLS == nil || len(resp.TLS.VerifiedChains) == 0 {
				t.Error("client-go did not verify the server")
			}
		})
	}
}

// A kubeconfig whose CA does not sign the server must fail: verification is on.
func TestKubeconfigRejectsOtherServer(t *testing.T) {
	t.Parallel()
	b, _ := newBundle(t)
	other, _ := newBundle(t)
	srv := startServer(t, other)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(path, srv.URL, b, "", ""); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatal("request to a server signed by another CA succeeded")
	}
	if !strings.Contains(err.Error(), "unknown authority") {
		t.Errorf("error %v, want an unknown authority", err)
	}
}

func TestWriteKubeconfigErrors(t *testing.T) {
	t.Parallel()
	b, _ := newBundle(t)
	tests := []struct {
		name      string
		url       string
		b         *Bundle
		cert, key string
		wantErr   string
	}{
		{name: "http", url: "http://127.0.0.1:6443", b: b, wantErr: "not an https URL"},
		{name: "no host", url: "https://", b: b, wantErr: "not an https URL"},
		{name: "nil bundle", url: "https://127.0.0.1:6443", wantErr: "without a Bundle"},
		{name: "missing cert", url: "https://127.0.0.1:6443", b: b, cert: "/nonexistent.crt", key: "/nonexistent.key", wantErr: "reading client certificate"},
		{name: "mismatched pair", url: "https://127.0.0.1:6443", b: b, cert: b.AdminCertFile, key: b.ServingKeyFile, wantErr: "client certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "kubeconfig")
			err := WriteKubeconfig(path, tt.url, tt.b, tt.cert, tt.key)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Errorf("error quotes key material: %v", err)
			}
			if _, err := os.Stat(path); err == nil {
				t.Error("kubeconfig written despite the error")
			}
		})
	}
}

// The stock kubectl, with verification on, reaches the server as the admin.
func TestIntegrationKubectl(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		prereq.Missing(t, "kubectl not in PATH")
	}
	t.Parallel()
	b, _ := newBundle(t)
	srv := startServer(t, b)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(path, srv.URL, b, "", ""); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), kubectl, "--kubeconfig", path, "get", "--raw", "/whoami")
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "kubebus-admin|system:masters" {
		t.Errorf("kubectl got %q", got)
	}
}

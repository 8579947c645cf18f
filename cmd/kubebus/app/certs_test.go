package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// runCerts runs `kubebus certs args...` and returns its output.
func runCerts(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := newCertsCmd()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// caPool reads the CA of a pki dir.
func caPool(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		t.Fatal("ca.crt holds no certificate")
	}
	return pool
}

// checkClient fails t unless pair is a client certificate of the CA in
// dir for user and groups.
func checkClient(t *testing.T, dir string, pair tls.Certificate, user string, groups []string) {
	t.Helper()
	leaf := pair.Leaf
	if leaf.Subject.CommonName != user || !slices.Equal(leaf.Subject.Organization, groups) {
		t.Errorf("subject %v, want %s %v", leaf.Subject, user, groups)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: caPool(t, dir), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("does not verify as a client certificate of the CA: %v", err)
	}
}

func TestCertsCmd(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "pki")
	out, err := runCerts(t, "--pki-dir", dir, "--hosts", "localhost,10.0.0.5")
	if err != nil {
		t.Fatal(err, out)
	}
	for _, f := range []string{"ca.crt", "ca.key", "serving.crt", "serving.key", "admin.crt", "admin.key"} {
		if !strings.Contains(out, filepath.Join(dir, f)) {
			t.Errorf("output does not name %s:\n%s", f, out)
		}
	}
	serving, err := tls.LoadX509KeyPair(filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := serving.Leaf.Verify(x509.VerifyOptions{Roots: caPool(t, dir), DNSName: "10.0.0.5"}); err != nil {
		t.Errorf("the serving certificate is not for 10.0.0.5: %v", err)
	}
	admin, err := tls.LoadX509KeyPair(filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	checkClient(t, dir, admin, "kubebus-admin", []string{"system:masters"})

	// Again: the CA stays.
	ca, _ := os.ReadFile(filepath.Join(dir, "ca.key"))
	if out, err := runCerts(t, "--pki-dir", dir, "--hosts", "localhost,10.0.0.5"); err != nil {
		t.Fatal(err, out)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "ca.key")); !bytes.Equal(ca, again) {
		t.Error("a second run replaced the CA")
	}

	t.Run("client", func(t *testing.T) {
		t.Parallel()
		prefix := filepath.Join(t.TempDir(), "creds", "alice")
		if out, err := runCerts(t, "client", "--pki-dir", dir, "--user", "alice", "--group", "dev", "--group", "ops", "--out", prefix); err != nil {
			t.Fatal(err, out)
		}
		pair, err := tls.LoadX509KeyPair(prefix+".crt", prefix+".key")
		if err != nil {
			t.Fatal(err)
		}
		checkClient(t, dir, pair, "alice", []string{"dev", "ops"})
	})

	t.Run("kubeconfig", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "n1.kubeconfig")
		if out, err := runCerts(t, "kubeconfig", "--pki-dir", dir, "--user", "system:node:n1", "--group", "system:nodes",
			"--server", "https://10.0.0.5:6443", "--out", file); err != nil {
			t.Fatal(err, out)
		}
		if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("kubeconfig: %v, %v", fi, err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", file)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Host != "https://10.0.0.5:6443" {
			t.Errorf("server %q", cfg.Host)
		}
		caData, _ := os.ReadFile(filepath.Join(dir, "ca.crt"))
		if !bytes.Equal(cfg.TLSClientConfig.CAData, caData) {
			t.Error("the kubeconfig does not embed the CA")
		}
		pair, err := tls.X509KeyPair(cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData)
		if err != nil {
			t.Fatal(err)
		}
		checkClient(t, dir, pair, "system:node:n1", []string{"system:nodes"})
	})
}

func TestCertsCmdErrors(t *testing.T) {
	t.Parallel()
	none := filepath.Join(t.TempDir(), "none")
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no pki dir", []string{}, `"pki-dir" not set`},
		{"client without a CA", []string{"client", "--pki-dir", none, "--user", "a", "--out", filepath.Join(none, "a")}, "run `kubebus certs --pki-dir " + none + "` first"},
		{"client without a user", []string{"client", "--pki-dir", none, "--out", "x"}, `"user" not set`},
		{"kubeconfig without a server", []string{"kubeconfig", "--pki-dir", none, "--user", "a", "--out", "x"}, `"server" not set`},
		{"kubeconfig over http", []string{"kubeconfig", "--pki-dir", none, "--user", "a", "--server", "http://h:6443", "--out", "x"}, "is not an https URL"},
		{"a bad host", []string{"--pki-dir", none, "--hosts", "h:6443"}, `host "h:6443" is neither`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if out, err := runCerts(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q\n%s", err, tc.wantErr, out)
			}
		})
	}
}

package pki

import (
	"bytes"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	b, cfg := newBundle(t)
	before := contents(t, b)
	loaded, err := Load(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.CAFile != b.CAFile || !loaded.CA.Equal(b.CA) {
		t.Errorf("loaded CA %s differs from %s", loaded.CAFile, b.CAFile)
	}
	if c := changed(before, contents(t, b)); len(c) > 0 {
		t.Errorf("Load changed %v", c)
	}

	if _, err := Load(filepath.Join(t.TempDir(), "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of an empty directory = %v, want os.ErrNotExist", err)
	}
	if err := os.Remove(b.CAKeyFile); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(cfg.Dir); !errors.Is(err, ErrNoCAKey) {
		t.Errorf("Load without the CA key = %v, want ErrNoCAKey", err)
	}
}

func TestIssueClientTo(t *testing.T) {
	t.Parallel()
	b, cfg := newBundle(t)
	loaded, err := Load(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out", "alice")
	certFile, keyFile := out+".crt", out+".key"
	if err := loaded.IssueClientTo(certFile, keyFile, "alice", []string{"dev", "ops"}); err != nil {
		t.Fatal(err)
	}
	verifies(t, b, certFile, x509.ExtKeyUsageClientAuth, time.Now())
	c := loadCert(t, certFile)
	if c.Subject.CommonName != "alice" || !slices.Equal(c.Subject.Organization, []string{"dev", "ops"}) {
		t.Errorf("subject %v", c.Subject)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != keyMode {
		t.Errorf("key file: %v, %v", fi, err)
	}
	first, _ := os.ReadFile(certFile)

	if err := loaded.IssueClientTo(certFile, keyFile, "alice", []string{"ops", "dev"}); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(certFile); !bytes.Equal(first, again) {
		t.Error("a valid certificate for the same user and groups was replaced")
	}
	if err := loaded.IssueClientTo(certFile, keyFile, "alice", []string{"dev"}); err != nil {
		t.Fatal(err)
	}
	if c := loadCert(t, certFile); !slices.Equal(c.Subject.Organization, []string{"dev"}) {
		t.Errorf("groups not updated: %v", c.Subject.Organization)
	}

	for _, tc := range []struct {
		name            string
		cert, key, user string
	}{
		{"no user", certFile, keyFile, ""},
		{"one file", certFile, certFile, "alice"},
		{"no file", "", keyFile, "alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := loaded.IssueClientTo(tc.cert, tc.key, tc.user, nil); err == nil {
				t.Error("no error")
			}
		})
	}
	if err := (&Bundle{}).IssueClientTo(certFile, keyFile, "alice", nil); err == nil {
		t.Error("a Bundle without a CA issued")
	}
}

// TestEnsureWithoutCAKey: a process that does not hold the CA's key (a
// split deployment's API server) keeps the certificates `kubebus certs`
// issued, and cannot issue new ones.
func TestEnsureWithoutCAKey(t *testing.T) {
	t.Parallel()
	cfg := Config{Dir: t.TempDir(), Hosts: []string{"localhost", "127.0.0.1"}}
	b, err := Ensure(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.IssueClient("kube-apiserver-kubelet-client", nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(b.CAKeyFile); err != nil {
		t.Fatal(err)
	}
	keyless, err := Ensure(cfg)
	if err != nil {
		t.Fatalf("Ensure without the CA key, certificates in place: %v", err)
	}
	if _, _, err := keyless.IssueClient("kube-apiserver-kubelet-client", nil); err != nil {
		t.Errorf("a valid client certificate without the CA key: %v", err)
	}
	if _, _, err := keyless.IssueClient("someone-new", nil); !errors.Is(err, ErrNoCAKey) {
		t.Errorf("issuing a new certificate without the CA key = %v, want ErrNoCAKey", err)
	}
	if _, err := Ensure(Config{Dir: cfg.Dir, Hosts: []string{"other.example"}}); !errors.Is(err, ErrNoCAKey) {
		t.Errorf("new serving names without the CA key = %v, want ErrNoCAKey", err)
	}
	if _, err := os.Stat(b.CAKeyFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a CA key appeared: %v", err)
	}
}

package pki

import (
	"bytes"
	"crypto/x509"
	"errors"
	"os"
	"testing"
)

func TestIssueServing(t *testing.T) {
	t.Parallel()
	b, cfg := newBundle(t)
	hosts := []string{"localhost", "127.0.0.1"}
	certFile, _, err := b.IssueServing("kubebus-nats", hosts)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	cert := loadCert(t, certFile)
	if cert.Subject.CommonName != "kubebus-nats" {
		t.Errorf("common name %q", cert.Subject.CommonName)
	}
	for _, h := range hosts {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: b.CA, DNSName: h, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("does not serve %s: %v", h, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: b.CA, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("a serving certificate verifies as a client certificate")
	}

	// Kept while valid for the same hosts; reissued for others.
	again, _, err := b.IssueServing("kubebus-nats", []string{"127.0.0.1", "localhost"})
	if err != nil || again != certFile {
		t.Fatalf("second IssueServing = %s, %v", again, err)
	}
	if d, _ := os.ReadFile(certFile); !bytes.Equal(d, data) {
		t.Error("a valid serving certificate was replaced")
	}
	if _, _, err := b.IssueServing("kubebus-nats", []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	if d, _ := os.ReadFile(certFile); bytes.Equal(d, data) {
		t.Error("the serving certificate kept a host no longer asked for")
	}

	// Without the CA key: the valid one is kept, none is made.
	if err := os.Remove(b.CAKeyFile); err != nil {
		t.Fatal(err)
	}
	keyless, err := Ensure(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := keyless.IssueServing("kubebus-nats", []string{"127.0.0.1"}); err != nil {
		t.Errorf("keyless IssueServing of a valid certificate: %v", err)
	}
	if _, _, err := keyless.IssueServing("other", hosts); !errors.Is(err, ErrNoCAKey) {
		t.Errorf("keyless IssueServing of a new certificate = %v, want ErrNoCAKey", err)
	}
}

package pki

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var testHosts = []string{"localhost", "127.0.0.1", "::1"}

// newBundle runs Ensure in a fresh directory.
func newBundle(t *testing.T, hosts ...string) (*Bundle, Config) {
	t.Helper()
	if len(hosts) == 0 {
		hosts = testHosts
	}
	cfg := Config{Dir: filepath.Join(t.TempDir(), "pki"), Hosts: hosts}
	b, err := Ensure(cfg)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	return b, cfg
}

// contents reads every file of b, keyed by file name.
func contents(t *testing.T, b *Bundle) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	for _, f := range []string{b.CAFile, b.CAKeyFile, b.ServingCertFile, b.ServingKeyFile, b.AdminCertFile, b.AdminKeyFile} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m[filepath.Base(f)] = data
	}
	return m
}

// changed lists the names whose content differs between a and b.
func changed(a, b map[string][]byte) []string {
	var out []string
	for _, name := range []string{caCertName, caKeyName, servingCertName, servingKeyName, adminCertName, adminKeyName} {
		if !bytes.Equal(a[name], b[name]) {
			out = append(out, name)
		}
	}
	return out
}

// loadCert parses the certificate in file.
func loadCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseCert(data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// loadCA reads the CA pair of b.
func loadCA(t *testing.T, b *Bundle) *keyPair {
	t.Helper()
	ca, err := readPair(b.CAFile, b.CAKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// verifies fails t unless the certificate in file chains to b's CA at now
// for usage.
func verifies(t *testing.T, b *Bundle, file string, usage x509.ExtKeyUsage, now time.Time) {
	t.Helper()
	_, err := loadCert(t, file).Verify(x509.VerifyOptions{Roots: b.CA, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}})
	if err != nil {
		t.Errorf("%s does not verify: %v", filepath.Base(file), err)
	}
}

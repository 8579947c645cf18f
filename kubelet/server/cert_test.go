package server

import (
	"crypto/x509"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubebus/kubebus/apiserver/pki"
)

// newCA makes a cluster CA (with an admin client certificate) the way the
// API server does.
func newCA(t *testing.T) *pki.Bundle {
	t.Helper()
	b, err := pki.Ensure(pki.Config{Dir: filepath.Join(t.TempDir(), "pki"), Hosts: []string{"localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestIssueServingCert(t *testing.T) {
	t.Parallel()
	b := newCA(t)
	cert, err := IssueServingCert(CertConfig{CAFile: b.CAFile, CAKeyFile: b.CAKeyFile, NodeName: "n1", Hosts: []string{"127.0.0.1", "Node-1.example", "::1"}})
	if err != nil {
		t.Fatal(err)
	}
	leaf := cert.Leaf
	if leaf.Subject.CommonName != "system:node:n1" || len(leaf.Subject.Organization) != 1 || leaf.Subject.Organization[0] != "system:nodes" {
		t.Errorf("subject = %v", leaf.Subject)
	}
	for _, host := range []string{"127.0.0.1", "::1", "node-1.example"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: b.CA, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("does not verify for %s: %v", host, err)
		}
	}
	if err := leaf.VerifyHostname("10.0.0.1"); err == nil {
		t.Error("verifies for an address it was not issued for")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: b.CA, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("a serving certificate verifies as a client certificate")
	}
	if len(leaf.IPAddresses) != 2 || !leaf.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Errorf("IP addresses = %v", leaf.IPAddresses)
	}
}

func TestIssueServingCertErrors(t *testing.T) {
	t.Parallel()
	b := newCA(t)
	other := newCA(t)
	cases := []struct {
		name    string
		cfg     CertConfig
		wantErr string
	}{
		{"no CA", CertConfig{NodeName: "n", Hosts: []string{"127.0.0.1"}}, "CA certificate and key files are required"},
		{"no node", CertConfig{CAFile: b.CAFile, CAKeyFile: b.CAKeyFile, Hosts: []string{"127.0.0.1"}}, "no node name"},
		{"no hosts", CertConfig{CAFile: b.CAFile, CAKeyFile: b.CAKeyFile, NodeName: "n"}, "no hosts"},
		{"host with port", CertConfig{CAFile: b.CAFile, CAKeyFile: b.CAKeyFile, NodeName: "n", Hosts: []string{"node:10250"}}, `host "node:10250" is neither`},
		{"missing CA file", CertConfig{CAFile: b.CAFile + ".gone", CAKeyFile: b.CAKeyFile, NodeName: "n", Hosts: []string{"127.0.0.1"}}, "reading CA certificate"},
		{"key of another CA", CertConfig{CAFile: b.CAFile, CAKeyFile: other.CAKeyFile, NodeName: "n", Hosts: []string{"127.0.0.1"}}, "does not match"},
		{"leaf as CA", CertConfig{CAFile: b.ServingCertFile, CAKeyFile: b.ServingKeyFile, NodeName: "n", Hosts: []string{"127.0.0.1"}}, "is not a CA certificate"},
		{"certificate as key", CertConfig{CAFile: b.CAFile, CAKeyFile: b.CAFile, NodeName: "n", Hosts: []string{"127.0.0.1"}}, "no PEM private key block"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := IssueServingCert(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

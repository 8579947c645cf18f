package certs

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubebus/kubebus/kubelet/certs/certstest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// csrs lists the CSRs of client.
func csrs(t *testing.T, client kubernetes.Interface) []certificatesv1.CertificateSigningRequest {
	t.Helper()
	l, err := client.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// parseRequest parses the x509 request of a CSR.
func parseRequest(t *testing.T, req certificatesv1.CertificateSigningRequest) *x509.CertificateRequest {
	t.Helper()
	b, _ := pem.Decode(req.Spec.Request)
	if b == nil {
		t.Fatalf("CSR %s: no PEM request", req.Name)
	}
	cr, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cr
}

func ensure(t *testing.T, m *Manager) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := m.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestEnsure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		signer     string
		hosts      []string
		wantUsages []certificatesv1.KeyUsage
		extUsage   x509.ExtKeyUsage
		wantDNS    []string
		wantIPs    []string
	}{
		{name: "serving", signer: certificatesv1.KubeletServingSignerName, hosts: []string{"10.0.0.7", "Node-1.Example", "::1", "10.0.0.7"},
			wantUsages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
			extUsage:   x509.ExtKeyUsageServerAuth, wantDNS: []string{"node-1.example"}, wantIPs: []string{"10.0.0.7", "::1"}},
		{name: "client", signer: certificatesv1.KubeAPIServerClientKubeletSignerName,
			wantUsages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			extUsage:   x509.ExtKeyUsageClientAuth},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := certstest.NewClientset()
			signer := certstest.NewSigner(t)
			signer.SetApprove(true)
			signer.Start(t, client)
			m, err := New(Config{Client: client, SignerName: tc.signer, NodeName: "n1", Hosts: tc.hosts, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			if m.Current() != nil {
				t.Fatal("a certificate before any request")
			}
			if _, err := m.GetCertificate(nil); err == nil || err.Error() != "no serving certificate available for the kubelet" {
				t.Errorf("GetCertificate before the first certificate: %v", err)
			}
			ensure(t, m)

			reqs := csrs(t, client)
			if len(reqs) != 1 {
				t.Fatalf("%d CSRs, want 1", len(reqs))
			}
			req := reqs[0]
			if req.Spec.SignerName != tc.signer || !slices.Equal(req.Spec.Usages, tc.wantUsages) || req.Spec.ExpirationSeconds != nil {
				t.Errorf("CSR spec: signer %q usages %q expiration %v", req.Spec.SignerName, req.Spec.Usages, req.Spec.ExpirationSeconds)
			}
			if !strings.HasPrefix(req.Name, "csr-") {
				t.Errorf("CSR name %q is not generated from csr-", req.Name)
			}
			cr := parseRequest(t, req)
			if cr.Subject.CommonName != "system:node:n1" || !slices.Equal(cr.Subject.Organization, []string{"system:nodes"}) {
				t.Errorf("request subject = %v", cr.Subject)
			}
			if _, ok := cr.PublicKey.(*ecdsa.PublicKey); !ok || cr.PublicKey.(*ecdsa.PublicKey).Curve != elliptic.P256() {
				t.Errorf("request key is %T, want ECDSA P-256", cr.PublicKey)
			}
			var ips []string
			for _, ip := range cr.IPAddresses {
				ips = append(ips, ip.String())
			}
			if !slices.Equal(cr.DNSNames, tc.wantDNS) || !slices.Equal(ips, tc.wantIPs) || len(cr.EmailAddresses)+len(cr.URIs) > 0 {
				t.Errorf("request names DNS %q IPs %q, want %q %q", cr.DNSNames, ips, tc.wantDNS, tc.wantIPs)
			}

			cert := m.Current()
			if cert == nil || cert.Leaf == nil {
				t.Fatal("no current certificate after Ensure")
			}
			if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: signer.Pool, KeyUsages: []x509.ExtKeyUsage{tc.extUsage}}); err != nil {
				t.Errorf("does not chain to the CA: %v", err)
			}
			for _, h := range tc.wantIPs {
				if err := cert.Leaf.VerifyHostname(h); err != nil {
					t.Errorf("not for %s: %v", h, err)
				}
			}
			pub, ok := cert.PrivateKey.(*ecdsa.PrivateKey)
			if !ok || !pub.PublicKey.Equal(cert.Leaf.PublicKey) {
				t.Error("the private key does not match the certificate")
			}
			got, err := m.GetCertificate(nil)
			if err != nil || got != cert {
				t.Errorf("GetCertificate = %v, %v", got, err)
			}
			if got, err := m.GetClientCertificate(nil); err != nil || got != cert {
				t.Errorf("GetClientCertificate = %v, %v", got, err)
			}
		})
	}
}

func TestApprove(t *testing.T) {
	t.Parallel()
	client := certstest.NewClientset()
	signer := certstest.NewSigner(t) // signs, approves nothing
	signer.Start(t, client)

	// Without Approve nobody approves: the request times out.
	m, err := New(Config{Client: client, NodeName: "n1", Hosts: []string{"127.0.0.1"}, RequestTimeout: 300 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Ensure(context.Background()); err == nil || !strings.Contains(err.Error(), "was not signed") {
		t.Fatalf("Ensure of an unapproved CSR = %v, want not signed", err)
	}

	m, err = New(Config{Client: client, NodeName: "n1", Hosts: []string{"127.0.0.1"}, Approve: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ensure(t, m)
	var approved int
	for _, req := range csrs(t, client) {
		for _, c := range req.Status.Conditions {
			if c.Type == certificatesv1.CertificateApproved {
				approved++
				if c.Reason != "AutoApproved" || c.Status != "True" {
					t.Errorf("condition %+v", c)
				}
			}
		}
	}
	if approved != 1 {
		t.Errorf("%d CSRs approved, want 1", approved)
	}
}

func TestDuration(t *testing.T) {
	t.Parallel()
	client := certstest.NewClientset()
	signer := certstest.NewSigner(t)
	signer.SetApprove(true)
	signer.Start(t, client)
	m, err := New(Config{Client: client, SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName, NodeName: "n1", Duration: 2 * time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ensure(t, m)
	reqs := csrs(t, client)
	if len(reqs) != 1 || reqs[0].Spec.ExpirationSeconds == nil || *reqs[0].Spec.ExpirationSeconds != 7200 {
		t.Fatalf("expirationSeconds not 7200: %+v", reqs)
	}
	if life := m.Current().Leaf.NotAfter.Sub(m.Current().Leaf.NotBefore); life != 2*time.Hour {
		t.Errorf("lifetime %s", life)
	}
}

// TestStoredReuse: a stored certificate is reused until 80% of its life
// and while it names what is asked for; otherwise a new one is requested.
func TestStoredReuse(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		after  time.Duration
		hosts  []string
		reused bool
	}{
		{name: "at 70% of its life", after: 7 * time.Hour, reused: true},
		{name: "at 85% of its life", after: 8*time.Hour + 30*time.Minute},
		{name: "expired", after: 11 * time.Hour},
		{name: "for other hosts", after: time.Hour, hosts: []string{"10.0.0.2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := clocktesting.NewFakeClock(start)
			client := certstest.NewClientset()
			signer := certstest.NewSigner(t)
			signer.SetApprove(true)
			signer.SetValidity(10 * time.Hour)
			signer.SetClock(clk.Now)
			signer.Start(t, client)
			dir := filepath.Join(t.TempDir(), "pki")
			cfg := Config{Client: client, NodeName: "n1", Hosts: []string{"10.0.0.1"}, Dir: dir, Clock: clk, Logger: quiet}
			first, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ensure(t, first)
			if fi, err := os.Stat(filepath.Join(dir, "kubelet-server-current.pem")); err != nil || fi.Mode().Perm()&0o077 != 0 {
				t.Fatalf("kubelet-server-current.pem: %v, %v", fi, err)
			}

			clk.SetTime(start.Add(tc.after))
			if tc.hosts != nil {
				cfg.Hosts = tc.hosts
			}
			again, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ensure(t, again)
			same := again.Current().Leaf.SerialNumber.Cmp(first.Current().Leaf.SerialNumber) == 0
			if n := len(csrs(t, client)); same != tc.reused || (tc.reused && n != 1) || (!tc.reused && n != 2) {
				t.Fatalf("reused %v after %d CSRs, want reused %v", same, n, tc.reused)
			}
			if !tc.reused && !again.Current().Leaf.NotBefore.Equal(clk.Now()) {
				t.Errorf("new certificate starts at %s, want %s", again.Current().Leaf.NotBefore, clk.Now())
			}
		})
	}
}

// TestRunRenews: Run requests a certificate when there is none and
// renews it once 80% of its lifetime has passed, swapping it under
// GetCertificate.
func TestRunRenews(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	client := certstest.NewClientset()
	signer := certstest.NewSigner(t)
	signer.SetApprove(true)
	signer.SetClock(clk.Now)
	signer.Start(t, client)
	m, err := New(Config{Client: client, NodeName: "n1", Hosts: []string{"127.0.0.1"}, Clock: clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()

	first := waitFor(t, func() *x509.Certificate {
		if c, err := m.GetCertificate(nil); err == nil {
			return c.Leaf
		}
		return nil
	})
	if want := start.Add(48 * time.Minute); !RenewAt(first).Equal(want) {
		t.Errorf("RenewAt = %s, want %s", RenewAt(first), want)
	}
	waitFor(t, func() *x509.Certificate {
		if clk.HasWaiters() { // Run sleeps until the renewal time
			return first
		}
		return nil
	})
	clk.Step(48*time.Minute + time.Second)
	second := waitFor(t, func() *x509.Certificate {
		if c := m.Current(); c.Leaf.SerialNumber.Cmp(first.SerialNumber) != 0 {
			return c.Leaf
		}
		return nil
	})
	if !second.NotBefore.Equal(clk.Now()) {
		t.Errorf("renewed certificate starts at %s, want %s", second.NotBefore, clk.Now())
	}
	if n := len(csrs(t, client)); n != 2 {
		t.Errorf("%d CSRs, want 2", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}

// waitFor polls f until it returns non-nil, for up to 30 seconds.
func waitFor(t *testing.T, f func() *x509.Certificate) *x509.Certificate {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if c := f(); c != nil {
			return c
		}
		<-tick.C
	}
	t.Fatal("timed out")
	return nil
}

func TestRenewAt(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		life, want time.Duration
	}{
		{time.Hour, 48 * time.Minute},
		{365 * 24 * time.Hour, 292 * 24 * time.Hour},
		{10 * time.Minute, 8 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.life.String(), func(t *testing.T) {
			t.Parallel()
			if got := RenewAt(&x509.Certificate{NotBefore: t0, NotAfter: t0.Add(tc.life)}); !got.Equal(t0.Add(tc.want)) {
				t.Errorf("RenewAt = %s, want %s", got.Sub(t0), tc.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	client := certstest.NewClientset()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"no client", Config{NodeName: "n", Hosts: []string{"127.0.0.1"}}, "no Client"},
		{"unknown signer", Config{Client: client, SignerName: "example.com/x", NodeName: "n"}, `signer "example.com/x" is neither`},
		{"serving without hosts", Config{Client: client, NodeName: "n"}, "needs hosts"},
		{"client with hosts", Config{Client: client, SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName, NodeName: "n", Hosts: []string{"a"}}, "names no hosts"},
		{"no node", Config{Client: client, Hosts: []string{"127.0.0.1"}}, "no node name"},
		{"host with port", Config{Client: client, NodeName: "n", Hosts: []string{"node:10250"}}, `host "node:10250" is neither`},
		{"zone", Config{Client: client, NodeName: "n", Hosts: []string{"fe80::1%lo"}}, "with a zone"},
		{"short duration", Config{Client: client, NodeName: "n", Hosts: []string{"a"}, Duration: time.Minute}, "shorter than the 10 minutes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.cfg.Logger = quiet
			if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("New = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestMappedAddresses: an IPv4-mapped IPv6 address is the IPv4 address.
func TestMappedAddresses(t *testing.T) {
	t.Parallel()
	s, err := newSpec(certificatesv1.KubeletServingSignerName, "n", []string{"::ffff:10.1.2.3", "10.1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.ips) != 1 || !net.IP(s.ips[0].AsSlice()).Equal(net.ParseIP("10.1.2.3")) {
		t.Errorf("ips = %v", s.ips)
	}
}

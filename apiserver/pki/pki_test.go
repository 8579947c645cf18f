package pki

import (
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestEnsureTwiceKeepsEverything(t *testing.T) {
	t.Parallel()
	b1, cfg := newBundle(t)
	before := contents(t, b1)

	b2, err := Ensure(cfg)
	if err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
	if got := changed(before, contents(t, b2)); len(got) != 0 {
		t.Errorf("second Ensure rewrote %v", got)
	}
	if !b1.CA.Equal(b2.CA) {
		t.Error("CA pools differ")
	}

	// Modes, and no temporary files left behind.
	entries, err := os.ReadDir(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		want := certMode
		switch {
		case strings.HasPrefix(e.Name(), "."):
			t.Errorf("temporary file %s left behind", e.Name())
			continue
		case strings.HasSuffix(e.Name(), ".key"):
			want = keyMode
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s mode %v, want %v", e.Name(), got, want)
		}
	}
	if info, err := os.Stat(cfg.Dir); err != nil || info.Mode().Perm() != dirMode {
		t.Errorf("directory mode: %v %v", info.Mode(), err)
	}
}

func TestEnsureCertificates(t *testing.T) {
	t.Parallel()
	b, _ := newBundle(t)
	now := time.Now()

	ca := loadCert(t, b.CAFile)
	if !ca.IsCA || ca.Subject.CommonName != "kubebus-ca" {
		t.Errorf("CA: IsCA %v, CN %q", ca.IsCA, ca.Subject.CommonName)
	}
	if d := ca.NotAfter.Sub(now); d < caValidity-time.Hour || d > caValidity {
		t.Errorf("CA valid for %v more, want about %v", d, caValidity)
	}

	verifies(t, b, b.ServingCertFile, x509.ExtKeyUsageServerAuth, now)
	serving := loadCert(t, b.ServingCertFile)
	for _, h := range testHosts {
		if err := serving.VerifyHostname(h); err != nil {
			t.Errorf("serving certificate: %v", err)
		}
	}
	if len(serving.DNSNames) != 1 || len(serving.IPAddresses) != 2 {
		t.Errorf("serving SANs: DNS %v IP %v", serving.DNSNames, serving.IPAddresses)
	}

	verifies(t, b, b.AdminCertFile, x509.ExtKeyUsageClientAuth, now)
	admin := loadCert(t, b.AdminCertFile)
	if name, groups := admin.Subject.CommonName, admin.Subject.Organization; name != "kubebus-admin" || !slices.Equal(groups, []string{"system:masters"}) {
		t.Errorf("admin user %q groups %q", name, groups)
	}

	for _, c := range []*x509.Certificate{ca, serving, admin} {
		if c.PublicKeyAlgorithm != x509.ECDSA || c.SerialNumber.Sign() <= 0 || c.SerialNumber.BitLen() > 128 {
			t.Errorf("%s: key %v, serial %v", c.Subject.CommonName, c.PublicKeyAlgorithm, c.SerialNumber)
		}
	}
	if d := serving.NotAfter.Sub(now); d < leafValidity-time.Hour || d > leafValidity {
		t.Errorf("serving certificate valid for %v more, want about %v", d, leafValidity)
	}
}

func TestEnsureHostChange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		hosts  []string
		change bool
	}{
		{name: "same hosts reordered", hosts: []string{"::1", "LOCALHOST", "127.0.0.1", "localhost"}},
		{name: "IPv6 spelled out", hosts: []string{"localhost", "127.0.0.1", "0:0:0:0:0:0:0:1"}},
		{name: "host removed", hosts: []string{"localhost", "127.0.0.1"}, change: true},
		{name: "DNS name added", hosts: append([]string{"kubebus.local"}, testHosts...), change: true},
		{name: "IP added", hosts: append([]string{"10.0.0.1"}, testHosts...), change: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, cfg := newBundle(t)
			before := contents(t, b)

			cfg.Hosts = tt.hosts
			b2, err := Ensure(cfg)
			if err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			var want []string
			if tt.change {
				want = []string{servingCertName, servingKeyName}
			}
			if got := changed(before, contents(t, b2)); !slices.Equal(got, want) {
				t.Fatalf("changed %v, want %v", got, want)
			}
			verifies(t, b, b2.ServingCertFile, x509.ExtKeyUsageServerAuth, time.Now())
			serving := loadCert(t, b2.ServingCertFile)
			for _, h := range tt.hosts {
				if err := serving.VerifyHostname(h); err != nil {
					t.Errorf("new serving certificate: %v", err)
				}
			}
			if tt.name == "host removed" {
				if err := serving.VerifyHostname("::1"); err == nil {
					t.Error("removed host ::1 still in the serving certificate")
				}
			}
		})
	}
}

func TestEnsureReplacesBadLeaf(t *testing.T) {
	t.Parallel()
	now := time.Now()
	// Each tamper damages one leaf pair; Ensure must replace exactly it.
	tests := []struct {
		name   string
		leaf   string // servingCertName or adminCertName
		tamper func(t *testing.T, b *Bundle, certFile, keyFile string, spec leafSpec)
	}{
		{name: "expired serving", leaf: servingCertName, tamper: reissue(now.Add(-2*leafValidity), now.Add(-time.Hour))},
		{name: "expired admin", leaf: adminCertName, tamper: reissue(now.Add(-2*leafValidity), now.Add(-time.Hour))},
		{name: "admin near expiry", leaf: adminCertName, tamper: reissue(now.Add(-time.Hour), now.Add(renewBefore-time.Hour))},
		{name: "serving not yet valid", leaf: servingCertName, tamper: reissue(now.Add(time.Hour), now.Add(leafValidity))},
		{name: "admin signed by another CA", leaf: adminCertName, tamper: func(t *testing.T, _ *Bundle, certFile, keyFile string, spec leafSpec) {
			other, err := newCA(now)
			if err != nil {
				t.Fatal(err)
			}
			writeLeaf(t, other, spec, now, now.Add(leafValidity), certFile, keyFile)
		}},
		{name: "admin with other groups", leaf: adminCertName, tamper: func(t *testing.T, b *Bundle, certFile, keyFile string, spec leafSpec) {
			spec.orgs = []string{"system:authenticated"}
			writeLeaf(t, loadCA(t, b), spec, now, now.Add(leafValidity), certFile, keyFile)
		}},
		{name: "serving key mismatch", leaf: servingCertName, tamper: func(t *testing.T, b *Bundle, _, keyFile string, _ leafSpec) {
			// The admin key is well-formed but belongs to another certificate.
			data, err := os.ReadFile(b.AdminKeyFile)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(keyFile, data, keyMode); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "serving key missing", leaf: servingCertName, tamper: func(t *testing.T, _ *Bundle, _, keyFile string, _ leafSpec) {
			if err := os.Remove(keyFile); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "admin certificate garbage", leaf: adminCertName, tamper: func(t *testing.T, _ *Bundle, certFile, _ string, _ leafSpec) {
			if err := os.WriteFile(certFile, []byte("not a certificate"), certMode); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, cfg := newBundle(t)
			hosts, err := parseHosts(cfg.Hosts)
			if err != nil {
				t.Fatal(err)
			}
			spec := leafSpec{commonName: servingCommonName, usage: x509.ExtKeyUsageServerAuth, hosts: hosts}
			certFile, keyFile := b.ServingCertFile, b.ServingKeyFile
			if tt.leaf == adminCertName {
				spec = clientSpec(AdminUser, []string{AdminGroup})
				certFile, keyFile = b.AdminCertFile, b.AdminKeyFile
			}
			tt.tamper(t, b, certFile, keyFile, spec)
			tampered := contents2(t, certFile)

			b2, err := Ensure(cfg)
			if err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			if string(tampered) == string(contents2(t, certFile)) {
				t.Errorf("%s was not replaced", tt.leaf)
			}
			if _, err := readPair(certFile, keyFile); err != nil {
				t.Errorf("replacement pair: %v", err)
			}
			verifies(t, b2, certFile, spec.usage, now)
			if err := checkLeaf(mustPair(t, certFile, keyFile), loadCA(t, b2), spec, now); err != nil {
				t.Errorf("replacement: %v", err)
			}
			if !b.CA.Equal(b2.CA) {
				t.Error("CA changed")
			}
		})
	}
}

// reissue returns a tamper that overwrites a leaf with one for the same
// spec, signed by the same CA, valid from notBefore to notAfter.
func reissue(notBefore, notAfter time.Time) func(*testing.T, *Bundle, string, string, leafSpec) {
	return func(t *testing.T, b *Bundle, certFile, keyFile string, spec leafSpec) {
		writeLeaf(t, loadCA(t, b), spec, notBefore, notAfter, certFile, keyFile)
	}
}

func writeLeaf(t *testing.T, ca *keyPair, spec leafSpec, notBefore, notAfter time.Time, certFile, keyFile string) {
	t.Helper()
	kp, err := issue(ca, spec, notBefore, notAfter)
	if err != nil {
		t.Fatal(err)
	}
	if err := writePair(certFile, keyFile, kp); err != nil {
		t.Fatal(err)
	}
}

func contents2(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustPair(t *testing.T, certFile, keyFile string) *keyPair {
	t.Helper()
	kp, err := readPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

func TestEnsureRenewsLeavesNearExpiryKeepsCA(t *testing.T) {
	t.Parallel()
	b, cfg := newBundle(t)
	before := contents(t, b)

	// 340 days on, the leaves have under 30 days left; the CA has years.
	later := time.Now().Add(leafValidity - renewBefore + 5*24*time.Hour)
	b2, err := ensure(cfg, func() time.Time { return later })
	if err != nil {
		t.Fatalf("ensure: %v", err)
	}
	want := []string{servingCertName, servingKeyName, adminCertName, adminKeyName}
	if got := changed(before, contents(t, b2)); !slices.Equal(got, want) {
		t.Fatalf("changed %v, want %v", got, want)
	}
	verifies(t, b2, b2.ServingCertFile, x509.ExtKeyUsageServerAuth, later.Add(leafValidity-time.Hour))
	verifies(t, b2, b2.AdminCertFile, x509.ExtKeyUsageClientAuth, later.Add(leafValidity-time.Hour))
}

func TestEnsureCA(t *testing.T) {
	t.Parallel()
	now := time.Now()
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string)
		wantErr string // "" for success
		is      error
	}{
		{name: "key without certificate is an interrupted start", prepare: func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, caKeyName), []byte("partial"), keyMode); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "certificate without key", wantErr: "key is missing", is: ErrNoCAKey, prepare: func(t *testing.T, dir string) {
			writeCA(t, dir, now)
			if err := os.Remove(filepath.Join(dir, caKeyName)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "expired CA", wantErr: "is valid only from", prepare: func(t *testing.T, dir string) {
			writeCA(t, dir, now.Add(-caValidity-time.Hour))
		}},
		{name: "leaf as CA", wantErr: "not a CA certificate", prepare: func(t *testing.T, dir string) {
			ca := writeCA(t, dir, now)
			writeLeaf(t, ca, clientSpec("x", nil), now, now.Add(time.Hour), filepath.Join(dir, caCertName), filepath.Join(dir, caKeyName))
		}},
		{name: "garbage CA key", wantErr: "malformed EC private key", prepare: func(t *testing.T, dir string) {
			writeCA(t, dir, now)
			bad := "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"
			if err := os.WriteFile(filepath.Join(dir, caKeyName), []byte(bad), keyMode); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tt.prepare(t, dir)
			before, _ := os.ReadFile(filepath.Join(dir, caCertName))
			b, err := Ensure(Config{Dir: dir, Hosts: testHosts})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Ensure: %v", err)
				}
				verifies(t, b, b.AdminCertFile, x509.ExtKeyUsageClientAuth, now)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Ensure error %v, want one containing %q", err, tt.wantErr)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			if after, _ := os.ReadFile(filepath.Join(dir, caCertName)); string(after) != string(before) {
				t.Error("CA certificate was replaced")
			}
		})
	}
}

func writeCA(t *testing.T, dir string, now time.Time) *keyPair {
	t.Helper()
	ca, err := newCA(now)
	if err != nil {
		t.Fatal(err)
	}
	if err := writePair(filepath.Join(dir, caCertName), filepath.Join(dir, caKeyName), ca); err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestEnsureConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "no dir", cfg: Config{Hosts: testHosts}, wantErr: "Dir is empty"},
		{name: "no hosts", cfg: Config{Dir: "x"}, wantErr: "Hosts is empty"},
		{name: "host with port", cfg: Config{Dir: "x", Hosts: []string{"localhost:6443"}}, wantErr: "neither an IP address nor a DNS name"},
		{name: "URL", cfg: Config{Dir: "x", Hosts: []string{"https://localhost"}}, wantErr: "neither"},
		{name: "empty host", cfg: Config{Dir: "x", Hosts: []string{""}}, wantErr: "neither"},
		{name: "zoned IP", cfg: Config{Dir: "x", Hosts: []string{"fe80::1%eth0"}}, wantErr: "zone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.cfg.Dir != "" {
				tt.cfg.Dir = filepath.Join(t.TempDir(), tt.cfg.Dir)
			}
			_, err := Ensure(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Ensure error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestIssueClient(t *testing.T) {
	t.Parallel()
	b, cfg := newBundle(t)
	now := time.Now()

	tests := []struct {
		user   string
		groups []string
	}{
		{user: "system:kube-scheduler"},
		{user: "system:kube-controller-manager"},
		{user: "system:node:worker-1", groups: []string{"system:nodes"}},
		{user: "ca"}, // must not touch the CA's files
		{user: "Alice", groups: []string{"dev", "ops"}},
		{user: "alice"}, // distinct from Alice even on case-folding file systems
	}
	files := map[string]string{}
	for _, tt := range tests {
		certFile, keyFile, err := b.IssueClient(tt.user, tt.groups)
		if err != nil {
			t.Fatalf("IssueClient(%q): %v", tt.user, err)
		}
		if other, dup := files[strings.ToLower(certFile)]; dup {
			t.Errorf("%q and %q share %s", tt.user, other, certFile)
		}
		files[strings.ToLower(certFile)] = tt.user
		if filepath.Dir(certFile) != cfg.Dir || filepath.Dir(keyFile) != cfg.Dir {
			t.Errorf("files %s %s outside %s", certFile, keyFile, cfg.Dir)
		}
		verifies(t, b, certFile, x509.ExtKeyUsageClientAuth, now)
		cert := loadCert(t, certFile)
		name, groups := cert.Subject.CommonName, cert.Subject.Organization
		if name != tt.user || !sameSet(groups, tt.groups) {
			t.Errorf("IssueClient(%q, %q) made user %q groups %q", tt.user, tt.groups, name, groups)
		}
	}
	if !loadCert(t, b.CAFile).IsCA {
		t.Fatal("CA certificate overwritten")
	}

	// Issuing again loads; other groups re-issue.
	certFile, _, _ := b.IssueClient("system:kube-scheduler", nil)
	first := contents2(t, certFile)
	if _, _, err := b.IssueClient("system:kube-scheduler", nil); err != nil {
		t.Fatal(err)
	}
	if string(contents2(t, certFile)) != string(first) {
		t.Error("IssueClient re-issued a valid certificate")
	}
	if _, _, err := b.IssueClient("system:kube-scheduler", []string{"extra"}); err != nil {
		t.Fatal(err)
	}
	if groups := loadCert(t, certFile).Subject.Organization; !slices.Equal(groups, []string{"extra"}) {
		t.Errorf("groups %q after re-issue, want [extra]", groups)
	}

	// A bundle from a later Ensure finds the same certificate.
	b2, err := Ensure(cfg)
	if err != nil {
		t.Fatal(err)
	}
	again := contents2(t, certFile)
	if _, _, err := b2.IssueClient("system:kube-scheduler", []string{"extra"}); err != nil {
		t.Fatal(err)
	}
	if string(contents2(t, certFile)) != string(again) {
		t.Error("IssueClient on a new Bundle re-issued a valid certificate")
	}

	if _, _, err := b.IssueClient("", nil); err == nil {
		t.Error("IssueClient with an empty user succeeded")
	}
	if _, _, err := new(Bundle).IssueClient("x", nil); err == nil {
		t.Error("IssueClient on a zero Bundle succeeded")
	}
}

func TestIssueClientConcurrent(t *testing.T) {
	t.Parallel()
	b, _ := newBundle(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			groups := []string{"a"}
			if i%2 == 1 {
				groups = []string{"b"}
			}
			if _, _, err := b.IssueClient("system:kube-proxy", groups); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	certFile, keyFile, err := b.IssueClient("system:kube-proxy", []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readPair(certFile, keyFile); err != nil {
		t.Errorf("pair after concurrent issue: %v", err)
	}
}

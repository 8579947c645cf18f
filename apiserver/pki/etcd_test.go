package pki

import (
	"bytes"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// etcdFiles lists every file of b.
func etcdFiles(b *EtcdBundle) []string {
	return []string{b.CAFile, b.CAKeyFile, b.ServerCertFile, b.ServerKeyFile, b.PeerCertFile, b.PeerKeyFile,
		b.PeerClientCertFile, b.PeerClientKeyFile, b.APIServerClientCertFile, b.APIServerClientKeyFile}
}

// readEtcdFiles reads every file of b, keyed by path.
func readEtcdFiles(t *testing.T, b *EtcdBundle) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	for _, f := range etcdFiles(b) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m[f] = data
	}
	return m
}

// etcdCert parses the certificate in file.
func etcdCert(t *testing.T, file string) *x509.Certificate {
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

func pool(t *testing.T, caFile string) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	p.AddCert(etcdCert(t, caFile))
	return p
}

func TestEnsureEtcdLayoutAndUsages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	cluster, err := Ensure(Config{Dir: dir, Hosts: testHosts})
	if err != nil {
		t.Fatal(err)
	}
	b, err := EnsureEtcd(EtcdConfig{Dir: dir, Hosts: []string{"etcd-0.example", "10.0.0.5"}})
	if err != nil {
		t.Fatal(err)
	}

	want := map[string]string{
		b.CAFile: "etcd/ca.crt", b.CAKeyFile: "etcd/ca.key",
		b.ServerCertFile: "etcd/server.crt", b.ServerKeyFile: "etcd/server.key",
		b.PeerCertFile: "etcd/peer.crt", b.PeerKeyFile: "etcd/peer.key",
		b.PeerClientCertFile: "etcd/peer-client.crt", b.PeerClientKeyFile: "etcd/peer-client.key",
		b.APIServerClientCertFile: "apiserver-etcd-client.crt", b.APIServerClientKeyFile: "apiserver-etcd-client.key",
	}
	if len(want) != 10 {
		t.Fatalf("EtcdBundle names %d distinct files, want 10", len(want))
	}
	if files := EtcdFiles(dir); *files != *b {
		t.Errorf("EtcdFiles = %+v, EnsureEtcd made %+v", files, b)
	}
	for got, rel := range want {
		if got != filepath.Join(dir, rel) {
			t.Errorf("file %s, want %s", got, filepath.Join(dir, rel))
		}
		fi, err := os.Stat(got)
		if err != nil {
			t.Fatal(err)
		}
		mode := certMode
		if filepath.Ext(got) == ".key" {
			mode = keyMode
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s has mode %v, want %v", rel, fi.Mode().Perm(), mode)
		}
	}

	// The etcd CA is its own, not the cluster CA.
	etcdCA := etcdCert(t, b.CAFile)
	if !etcdCA.IsCA {
		t.Fatal("etcd CA is not a CA")
	}
	if etcdCA.Equal(etcdCert(t, cluster.CAFile)) {
		t.Fatal("the etcd CA is the cluster CA")
	}

	roots := pool(t, b.CAFile)
	now := time.Now()
	leaves := []struct {
		file  string
		usage x509.ExtKeyUsage
		cn    string
		hosts bool
	}{
		{b.ServerCertFile, x509.ExtKeyUsageServerAuth, etcdServerCommonName, true},
		{b.PeerCertFile, x509.ExtKeyUsageServerAuth, etcdPeerCommonName, true},
		{b.PeerClientCertFile, x509.ExtKeyUsageClientAuth, etcdPeerCommonName, true},
		{b.APIServerClientCertFile, x509.ExtKeyUsageClientAuth, EtcdAPIServerClientUser, false},
	}
	for _, l := range leaves {
		c := etcdCert(t, l.file)
		name := filepath.Base(l.file)
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{l.usage}}); err != nil {
			t.Errorf("%s does not verify against the etcd CA: %v", name, err)
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: cluster.CA, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{l.usage}}); err == nil {
			t.Errorf("%s verifies against the cluster CA", name)
		}
		if !slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{l.usage}) {
			t.Errorf("%s usages %v, want only %v", name, c.ExtKeyUsage, l.usage)
		}
		if c.Subject.CommonName != l.cn || len(c.Subject.Organization) != 0 {
			t.Errorf("%s subject %v, want CN %s and no organization", name, c.Subject, l.cn)
		}
		if !l.hosts {
			if len(c.DNSNames)+len(c.IPAddresses) != 0 {
				t.Errorf("%s names %v %v, want none", name, c.DNSNames, c.IPAddresses)
			}
			continue
		}
		for _, h := range []string{"127.0.0.1", "localhost", "etcd-0.example", "10.0.0.5"} {
			if err := c.VerifyHostname(h); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		if len(c.DNSNames) != 2 || len(c.IPAddresses) != 2 {
			t.Errorf("%s names %v %v, want exactly localhost, etcd-0.example, 127.0.0.1, 10.0.0.5", name, c.DNSNames, c.IPAddresses)
		}
	}
	// Cluster client certificates do not verify against the etcd CA.
	if _, err := etcdCert(t, cluster.AdminCertFile).Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("the cluster admin certificate verifies against the etcd CA")
	}
}

func TestEnsureEtcdKeepsAndReplaces(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	b, err := EnsureEtcd(EtcdConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	first := readEtcdFiles(t, b)

	// Same config: nothing changes.
	if b, err = EnsureEtcd(EtcdConfig{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if diff := changedEtcd(b, first, readEtcdFiles(t, b)); len(diff) != 0 {
		t.Errorf("second run rewrote %v", diff)
	}

	// Another host: the member certificates change, the CA and the API
	// server's client certificate stay.
	if b, err = EnsureEtcd(EtcdConfig{Dir: dir, Hosts: []string{"::1"}}); err != nil {
		t.Fatal(err)
	}
	second := readEtcdFiles(t, b)
	want := []string{b.ServerCertFile, b.ServerKeyFile, b.PeerCertFile, b.PeerKeyFile, b.PeerClientCertFile, b.PeerClientKeyFile}
	if diff := changedEtcd(b, first, second); !slices.Equal(diff, want) {
		t.Errorf("new host rewrote %v, want %v", diff, want)
	}
	if !etcdCert(t, b.ServerCertFile).IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Error("serving certificate lost 127.0.0.1")
	}

	// Near the leaves' expiry: every leaf is replaced, the CA kept.
	later := time.Now().Add(leafValidity - renewBefore + time.Hour)
	if b, err = ensureEtcd(EtcdConfig{Dir: dir, Hosts: []string{"::1"}}, func() time.Time { return later }); err != nil {
		t.Fatal(err)
	}
	third := readEtcdFiles(t, b)
	if diff := changedEtcd(b, second, third); len(diff) != 8 || slices.Contains(diff, b.CAFile) || slices.Contains(diff, b.CAKeyFile) {
		t.Errorf("near expiry rewrote %v, want every leaf and not the CA", diff)
	}
}

func TestEnsureEtcdWithoutCAKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	b, err := EnsureEtcd(EtcdConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(b.CAKeyFile); err != nil {
		t.Fatal(err)
	}
	// Valid leaves are kept without the key.
	if _, err := EnsureEtcd(EtcdConfig{Dir: dir}); err != nil {
		t.Fatalf("valid leaves without the CA key: %v", err)
	}
	// A leaf that must be issued cannot be.
	_, err = EnsureEtcd(EtcdConfig{Dir: dir, Hosts: []string{"etcd-1"}})
	if !errors.Is(err, ErrNoCAKey) {
		t.Fatalf("new host without the CA key: %v, want ErrNoCAKey", err)
	}
	if _, statErr := os.Stat(b.CAKeyFile); !errors.Is(statErr, os.ErrNotExist) {
		t.Error("a CA key appeared")
	}
}

func TestEnsureEtcdBadConfig(t *testing.T) {
	if _, err := EnsureEtcd(EtcdConfig{}); err == nil {
		t.Error("empty Dir accepted")
	}
	if _, err := EnsureEtcd(EtcdConfig{Dir: t.TempDir(), Hosts: []string{"etcd:2379"}}); err == nil {
		t.Error("host with a port accepted")
	}
}

// changedEtcd lists, in etcdFiles order, the files of b whose content
// differs between before and after.
func changedEtcd(b *EtcdBundle, before, after map[string][]byte) []string {
	var out []string
	for _, f := range etcdFiles(b) {
		if !bytes.Equal(before[f], after[f]) {
			out = append(out, f)
		}
	}
	return out
}

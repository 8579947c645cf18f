package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testCA signs certificates for ClientCert's tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

var serial atomic.Int64

func newTestCA(t testing.TB, parent *testCA, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// leaf issues a certificate for subject, valid until notAfter, with usage.
func (ca *testCA) leaf(t testing.TB, subject pkix.Name, notAfter time.Time, usage x509.ExtKeyUsage) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1)), Subject: subject,
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func certRequest(chain ...*x509.Certificate) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/api", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: chain}
	return r
}

func TestClientCert(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, nil, "ca")
	other := newTestCA(t, nil, "other")
	inter := newTestCA(t, ca, "intermediate")
	day := time.Now().Add(24 * time.Hour)
	alice := ca.leaf(t, pkix.Name{CommonName: "alice", Organization: []string{"dev", "ops"}}, day, x509.ExtKeyUsageClientAuth)

	tests := []struct {
		name    string
		r       *http.Request
		ok      bool
		user    string
		groups  []string
		wantErr string // part of the error; "" for none
	}{
		{name: "user and groups", r: certRequest(alice), ok: true, user: "alice", groups: []string{"dev", "ops"}},
		{name: "no groups", r: certRequest(ca.leaf(t, pkix.Name{CommonName: "bob"}, day, x509.ExtKeyUsageClientAuth)), ok: true, user: "bob"},
		{name: "through an intermediate", r: certRequest(inter.leaf(t, pkix.Name{CommonName: "carol"}, day, x509.ExtKeyUsageClientAuth), inter.cert),
			ok: true, user: "carol"},
		// An empty common name is no user, as upstream's
		// CommonNameUserConversion: other authenticators may answer.
		{name: "empty common name", r: certRequest(ca.leaf(t, pkix.Name{Organization: []string{"system:masters"}}, day, x509.ExtKeyUsageClientAuth))},
		{name: "no TLS", r: httptest.NewRequest(http.MethodGet, "/api", nil)},
		{name: "no certificate", r: certRequest()},
		// What the handshake no longer refuses is refused here, as a 401.
		{name: "another CA", r: certRequest(other.leaf(t, pkix.Name{CommonName: "mallory", Organization: []string{"system:masters"}}, day, x509.ExtKeyUsageClientAuth)),
			wantErr: "certificate signed by unknown authority"},
		{name: "expired", r: certRequest(ca.leaf(t, pkix.Name{CommonName: "dave"}, time.Now().Add(-time.Hour), x509.ExtKeyUsageClientAuth)),
			wantErr: "expired"},
		{name: "serving certificate", r: certRequest(ca.leaf(t, pkix.Name{CommonName: "server"}, day, x509.ExtKeyUsageServerAuth)),
			wantErr: "incompatible key usage"},
		{name: "intermediate missing", r: certRequest(inter.leaf(t, pkix.Name{CommonName: "erin"}, day, x509.ExtKeyUsageClientAuth)),
			wantErr: "unknown authority"},
	}
	authn := &ClientCert{Roots: ca.pool}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Twice: the second answer comes from what the first remembered.
			for range 2 {
				u, ok, err := authn.Authenticate(tt.r)
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) || ok {
						t.Fatalf("= %+v, %v, %v; want an error with %q", u, ok, err, tt.wantErr)
					}
					continue
				}
				if err != nil || ok != tt.ok || u.Name != tt.user || !slices.Equal(u.Groups, tt.groups) {
					t.Fatalf("= %+v, %v, %v; want %v %q %v", u, ok, err, tt.ok, tt.user, tt.groups)
				}
			}
		})
	}

	// Without roots no certificate authenticates anyone.
	if u, ok, err := (&ClientCert{}).Authenticate(certRequest(alice)); ok || err != nil {
		t.Errorf("without roots = %+v, %v, %v; want no user", u, ok, err)
	}
}

// A remembered certificate is verified again once its chain has expired.
func TestClientCertExpiresFromMemory(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, nil, "ca")
	leaf := ca.leaf(t, pkix.Name{CommonName: "alice"}, time.Now().Add(time.Hour), x509.ExtKeyUsageClientAuth)
	now := time.Now()
	authn := &ClientCert{Roots: ca.pool, Now: func() time.Time { return now }}
	if _, ok, err := authn.Authenticate(certRequest(leaf)); !ok || err != nil {
		t.Fatalf("fresh certificate: ok %v, err %v", ok, err)
	}
	now = now.Add(2 * time.Hour)
	if _, ok, err := authn.Authenticate(certRequest(leaf)); ok || err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("two hours on: ok %v, err %v; want an expired certificate", ok, err)
	}
}

// The user returned is the caller's to change.
func TestClientCertGroupsAreCopies(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, nil, "ca")
	leaf := ca.leaf(t, pkix.Name{CommonName: "alice", Organization: []string{"dev"}}, time.Now().Add(time.Hour), x509.ExtKeyUsageClientAuth)
	authn := &ClientCert{Roots: ca.pool}
	u, _, _ := authn.Authenticate(certRequest(leaf))
	u.Groups[0] = "system:masters"
	if u, _, _ := authn.Authenticate(certRequest(leaf)); u.Groups[0] != "dev" {
		t.Fatalf("groups = %v after the caller changed its copy, want [dev]", u.Groups)
	}
}

// BenchmarkClientCert: a request's certificate, remembered from an earlier
// request (every request of a connection but the first), and verified
// afresh (what the first costs).
func BenchmarkClientCert(b *testing.B) {
	ca := newTestCA(b, nil, "ca")
	leaf := ca.leaf(b, pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}, time.Now().Add(time.Hour), x509.ExtKeyUsageClientAuth)
	r := certRequest(leaf)
	b.Run("remembered", func(b *testing.B) {
		authn := &ClientCert{Roots: ca.pool}
		for b.Loop() {
			if _, ok, err := authn.Authenticate(r); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("verified", func(b *testing.B) {
		for b.Loop() {
			if _, ok, err := (&ClientCert{Roots: ca.pool}).Authenticate(r); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
}

// What is remembered is the chain the client sent: a leaf that verified
// with its intermediate is not taken without it.
func TestClientCertRemembersTheSentChain(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, nil, "ca")
	inter := newTestCA(t, ca, "intermediate")
	leaf := inter.leaf(t, pkix.Name{CommonName: "carol"}, time.Now().Add(time.Hour), x509.ExtKeyUsageClientAuth)
	authn := &ClientCert{Roots: ca.pool}
	if u, ok, err := authn.Authenticate(certRequest(leaf, inter.cert)); !ok || err != nil || u.Name != "carol" {
		t.Fatalf("with the intermediate: %+v %v %v", u, ok, err)
	}
	if _, ok, err := authn.Authenticate(certRequest(leaf)); ok || err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("without the intermediate after it verified with it: ok %v, err %v; want unknown authority", ok, err)
	}
}

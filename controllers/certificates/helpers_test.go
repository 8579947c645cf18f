package certificates

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/cert"
)

// testCA makes a CA valid for validity from now and writes it to files.
func testCA(t *testing.T, now time.Time, validity time.Duration) (ca *CA, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	ca, err = LoadCA(certFile, keyFile)
	if err != nil {
		t.Fatalf("LoadCA: %v", err)
	}
	return ca, certFile, keyFile
}

// request is the content of a certificate request.
type request struct {
	cn     string
	orgs   []string
	dns    []string
	ips    []string
	emails []string
}

func clientOf(node string) request {
	return request{cn: "system:node:" + node, orgs: []string{"system:nodes"}}
}

func servingOf(node string) request {
	return request{cn: "system:node:" + node, orgs: []string{"system:nodes"}, dns: []string{node}, ips: []string{"10.0.0.7"}}
}

// pemRequest returns a signed PEM certificate request for r.
func pemRequest(t *testing.T, r request) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: r.cn, Organization: r.orgs}, DNSNames: r.dns, EmailAddresses: r.emails}
	for _, ip := range r.ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	b, err := cert.MakeCSRFromTemplate(key, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parsed(t *testing.T, r request) *x509.CertificateRequest {
	t.Helper()
	req, err := ParseRequest(pemRequest(t, r))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

var (
	clientUsages  = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	servingUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth}
)

// newCSR returns a CSR object for r.
func newCSR(t *testing.T, name, signer, user string, groups []string, r request, usages []certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "3"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: pemRequest(t, r), SignerName: signer, Usages: usages, Username: user, Groups: groups,
		},
	}
}

func withCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue})
	return csr
}

// csrs is a CSRs cache the test fills.
type csrs map[string]*certificatesv1.CertificateSigningRequest

func (s csrs) Get(_, name string) (*certificatesv1.CertificateSigningRequest, bool) {
	c, ok := s[name]
	return c, ok
}

// servingNaming is node's serving certificate request for dns and ips.
func servingNaming(node string, dns []string, ips ...string) request {
	return request{cn: "system:node:" + node, orgs: []string{"system:nodes"}, dns: dns, ips: ips}
}

// nodeAt returns a Node named name with addrs, given as type and address
// pairs.
func nodeAt(name string, addrs ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for i := 0; i+1 < len(addrs); i += 2 {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeAddressType(addrs[i]), Address: addrs[i+1]})
	}
	return n
}

// nodes is a Nodes cache the test fills; it is not safe for concurrent
// use.
type nodes map[string]*corev1.Node

func (s nodes) Get(_, name string) (*corev1.Node, bool) {
	n, ok := s[name]
	return n, ok
}

// List lists the CSRs, in no particular order.
func (s csrs) List() []*certificatesv1.CertificateSigningRequest {
	out := make([]*certificatesv1.CertificateSigningRequest, 0, len(s))
	for _, c := range s {
		out = append(out, c)
	}
	return out
}

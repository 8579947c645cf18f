package server

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"strings"
	"time"
)

// DefaultCertValidity is how long an issued serving certificate is valid
// (never beyond the CA's own expiry).
const DefaultCertValidity = 365 * 24 * time.Hour

// certBackdate starts validity a little in the past to tolerate clock skew.
const certBackdate = 5 * time.Minute

// CertConfig asks for a kubelet serving certificate.
type CertConfig struct {
	// CAFile and CAKeyFile are the cluster CA's certificate and key (PEM),
	// e.g. DATA_DIR/pki/ca.crt and ca.key of the all-in-one server.
	CAFile, CAKeyFile string
	// NodeName becomes the subject, system:node:<NodeName>, as upstream.
	NodeName string
	// Hosts are the IP addresses and DNS names the API server may dial the
	// kubelet at: the node's InternalIP at least.
	Hosts []string
	// Validity defaults to DefaultCertValidity.
	Validity time.Duration
}

func (c *CertConfig) validate() error {
	if c.CAFile == "" || c.CAKeyFile == "" {
		return errors.New("kubelet serving certificate: the CA certificate and key files are required")
	}
	if c.NodeName == "" {
		return errors.New("kubelet serving certificate: no node name")
	}
	if len(c.Hosts) == 0 {
		return errors.New("kubelet serving certificate: no hosts (the node's IP addresses and names)")
	}
	if c.Validity <= 0 {
		c.Validity = DefaultCertValidity
	}
	return nil
}

// IssueServingCert issues, in memory, a serving certificate for the node's
// hosts signed by the cluster CA, with a fresh ECDSA P-256 key; nothing is
// written to disk. Only a holder of the CA key can: tests and tools. The
// kubelet itself requests its certificate through the CSR API (package
// kubelet/certs).
func IssueServingCert(c CertConfig) (tls.Certificate, error) {
	if err := c.validate(); err != nil {
		return tls.Certificate{}, err
	}
	var dns []string
	var ips []net.IP
	for _, h := range c.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
			continue
		}
		if !validDNSName(h) {
			return tls.Certificate{}, fmt.Errorf("kubelet serving certificate: host %q is neither an IP address nor a DNS name", h)
		}
		dns = append(dns, strings.ToLower(h))
	}
	caCert, caKey, err := loadCA(c.CAFile, c.CAKeyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet serving certificate: %w", err)
	}
	now := time.Now()
	notAfter := now.Add(c.Validity)
	if notAfter.After(caCert.NotAfter) {
		notAfter = caCert.NotAfter
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet serving certificate: generating key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet serving certificate: generating serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial.Add(serial, big.NewInt(1)),
		Subject:               pkix.Name{CommonName: "system:node:" + c.NodeName, Organization: []string{"system:nodes"}},
		NotBefore:             now.Add(-certBackdate).UTC(),
		NotAfter:              notAfter.UTC(),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              dns,
		IPAddresses:           ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet serving certificate: signing: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet serving certificate: parsing: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// loadCA reads a CA certificate and its key and checks that they belong
// together and may sign. Its errors never quote the key.
func loadCA(certFile, keyFile string) (*x509.Certificate, crypto.Signer, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, nil, fmt.Errorf("reading CA certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("reading CA key: %w", err)
	}
	block := firstBlock(certPEM, "CERTIFICATE")
	if block == nil {
		return nil, nil, fmt.Errorf("CA certificate %s: no PEM CERTIFICATE block", certFile)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("CA certificate %s: %w", certFile, err)
	}
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, nil, fmt.Errorf("%s is not a CA certificate", certFile)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("CA key %s: %w", keyFile, err)
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, nil, fmt.Errorf("CA key %s does not match certificate %s", keyFile, certFile)
	}
	return cert, key, nil
}

func firstBlock(data []byte, typ string) *pem.Block {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil || b.Type == typ {
			return b
		}
	}
}

// parseKey accepts SEC 1 EC, PKCS #1 RSA and PKCS #8 keys.
func parseKey(data []byte) (crypto.Signer, error) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, errors.New("no PEM private key block")
		}
		var k any
		var err error
		switch b.Type {
		case "EC PRIVATE KEY":
			k, err = x509.ParseECPrivateKey(b.Bytes)
		case "RSA PRIVATE KEY":
			k, err = x509.ParsePKCS1PrivateKey(b.Bytes)
		case "PRIVATE KEY":
			k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("malformed %s block", b.Type)
		}
		s, ok := k.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("unsupported private key type %T", k)
		}
		return s, nil
	}
}

// validDNSName reports whether s can be a DNS subject alternative name; it
// catches mistakes such as "host:10250" or "https://host".
func validDNSName(s string) bool {
	if s == "" || len(s) > 253 || strings.HasPrefix(s, ".") || strings.Contains(s, "..") {
		return false
	}
	for _, r := range s {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '-', r == '_', r == '.':
		default:
			return false
		}
	}
	return true
}

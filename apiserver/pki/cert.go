package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"
)

// Lifetimes of what this package issues.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
	// renewBefore is how long before its expiry a leaf is replaced.
	renewBefore = 30 * 24 * time.Hour
	// backdate starts validity a little in the past to tolerate clock skew
	// between the host that issues and the one that verifies.
	backdate = 5 * time.Minute
)

// PEM block types.
const (
	pemCertificate = "CERTIFICATE"
	pemECKey       = "EC PRIVATE KEY"
	pemPKCS8Key    = "PRIVATE KEY"
)

// keyPair is a certificate with its private key, parsed and as PEM.
type keyPair struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

// leafSpec says what a leaf certificate names and is for.
type leafSpec struct {
	commonName string
	orgs       []string
	usage      x509.ExtKeyUsage
	hosts      hostSet // serving certificates only
}

// hostSet is the subject alternative names of a serving certificate.
type hostSet struct {
	dns []string     // lower case, sorted, unique
	ips []netip.Addr // unmapped, sorted, unique
}

// parseHosts splits host names and IP addresses, normalising and removing
// duplicates.
func parseHosts(hosts []string) (hostSet, error) {
	var hs hostSet
	for _, h := range hosts {
		if ip, err := netip.ParseAddr(h); err == nil {
			if ip.Zone() != "" {
				return hostSet{}, fmt.Errorf("host %q: an IP address with a zone cannot be a certificate name", h)
			}
			hs.ips = append(hs.ips, ip.Unmap())
			continue
		}
		if !validDNSName(h) {
			return hostSet{}, fmt.Errorf("host %q is neither an IP address nor a DNS name", h)
		}
		hs.dns = append(hs.dns, strings.ToLower(h))
	}
	slices.Sort(hs.dns)
	hs.dns = slices.Compact(hs.dns)
	slices.SortFunc(hs.ips, netip.Addr.Compare)
	hs.ips = slices.Compact(hs.ips)
	return hs, nil
}

// validDNSName reports whether s can be a DNS subject alternative name:
// letters, digits, '-', '_', '.' and a leading "*." wildcard label. It
// catches typos such as "localhost:6443" or "https://host".
func validDNSName(s string) bool {
	s = strings.TrimPrefix(s, "*.")
	if s == "" || len(s) > 253 || strings.HasPrefix(s, ".") || strings.Contains(s, "..") {
		return false
	}
	for _, r := range s {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		case r == '-', r == '_', r == '.':
		default:
			return false
		}
	}
	return true
}

// hostsOf returns the subject alternative names of cert as a hostSet.
func hostsOf(cert *x509.Certificate) hostSet {
	var hs hostSet
	for _, d := range cert.DNSNames {
		hs.dns = append(hs.dns, strings.ToLower(d))
	}
	for _, ip := range cert.IPAddresses {
		if a, ok := netip.AddrFromSlice(ip); ok {
			hs.ips = append(hs.ips, a.Unmap())
		}
	}
	slices.Sort(hs.dns)
	hs.dns = slices.Compact(hs.dns)
	slices.SortFunc(hs.ips, netip.Addr.Compare)
	hs.ips = slices.Compact(hs.ips)
	return hs
}

func (hs hostSet) equal(o hostSet) bool {
	return slices.Equal(hs.dns, o.dns) && slices.Equal(hs.ips, o.ips)
}

func (hs hostSet) netIPs() []net.IP {
	ips := make([]net.IP, 0, len(hs.ips))
	for _, a := range hs.ips {
		ips = append(ips, net.IP(a.AsSlice()))
	}
	return ips
}

// newSerial returns a random positive 128-bit serial number.
func newSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	for {
		n, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return nil, fmt.Errorf("generating serial number: %w", err)
		}
		if n.Sign() > 0 {
			return n, nil
		}
	}
}

// newCA makes a self-signed CA valid for caValidity from now.
func newCA(now time.Time) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "kubebus-ca"},
		NotBefore:             now.Add(-backdate).UTC(),
		NotAfter:              now.Add(caValidity).UTC(),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	return encodePair(der, key)
}

// newLeaf issues a leaf for spec, signed by ca, valid for leafValidity from
// now but never beyond the CA's own expiry.
func newLeaf(ca *keyPair, spec leafSpec, now time.Time) (*keyPair, error) {
	notAfter := now.Add(leafValidity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	return issue(ca, spec, now.Add(-backdate), notAfter)
}

// issue signs a fresh key for spec with ca, valid from notBefore to notAfter.
func issue(ca *keyPair, spec leafSpec, notBefore, notAfter time.Time) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key for %q: %w", spec.commonName, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: spec.commonName, Organization: slices.Clone(spec.orgs)},
		NotBefore:             notBefore.UTC(),
		NotAfter:              notAfter.UTC(),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{spec.usage},
		BasicConstraintsValid: true,
		DNSNames:              spec.hosts.dns,
		IPAddresses:           spec.hosts.netIPs(),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return nil, fmt.Errorf("creating certificate for %q: %w", spec.commonName, err)
	}
	return encodePair(der, key)
}

func encodePair(der []byte, key *ecdsa.PrivateKey) (*keyPair, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing new certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding new key: %w", err)
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: pemECKey, Bytes: keyDER}),
	}, nil
}

// writePair writes the key, then the certificate. A crash in between
// leaves a key that does not match the certificate, which readPair reports
// and the caller repairs by issuing again.
func writePair(certFile, keyFile string, kp *keyPair) error {
	if err := WriteFileAtomic(keyFile, kp.keyPEM, keyMode); err != nil {
		return err
	}
	return WriteFileAtomic(certFile, kp.certPEM, certMode)
}

// readPair reads and parses a certificate and its key and checks that they
// belong together. A missing file gives an error matching os.ErrNotExist.
func readPair(certFile, keyFile string) (*keyPair, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("reading certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("reading key: %w", err)
	}
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("certificate %s: %w", certFile, err)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", keyFile, err)
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("key %s does not match certificate %s", keyFile, certFile)
	}
	return &keyPair{cert: cert, key: key, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// readCert reads a certificate without its key (the CA, where the key is
// not held).
func readCert(certFile string) (*keyPair, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("reading certificate: %w", err)
	}
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("certificate %s: %w", certFile, err)
	}
	return &keyPair{cert: cert, certPEM: certPEM}, nil
}

func parseCert(data []byte) (*x509.Certificate, error) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, errors.New("no PEM CERTIFICATE block")
		}
		if b.Type == pemCertificate {
			return x509.ParseCertificate(b.Bytes)
		}
	}
}

// parseKey accepts SEC 1 EC keys and PKCS #8 keys. Its errors never quote
// the key.
func parseKey(data []byte) (crypto.Signer, error) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, errors.New("no PEM private key block")
		}
		switch b.Type {
		case pemECKey:
			k, err := x509.ParseECPrivateKey(b.Bytes)
			if err != nil {
				return nil, errors.New("malformed EC private key")
			}
			return k, nil
		case pemPKCS8Key:
			k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
			if err != nil {
				return nil, errors.New("malformed PKCS #8 private key")
			}
			s, ok := k.(crypto.Signer)
			if !ok {
				return nil, fmt.Errorf("unsupported private key type %T", k)
			}
			return s, nil
		}
	}
}

// checkLeaf returns why kp no longer serves spec at time now, or nil when it
// still does: it must chain to ca for spec's usage, have at least
// renewBefore left, and carry exactly spec's subject and host names.
func checkLeaf(kp, ca *keyPair, spec leafSpec, now time.Time) error {
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	_, err := kp.cert.Verify(x509.VerifyOptions{
		Roots:       roots,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{spec.usage},
	})
	if err != nil {
		return fmt.Errorf("does not verify against the CA: %w", err)
	}
	if left := kp.cert.NotAfter.Sub(now); left < renewBefore {
		return fmt.Errorf("expires at %s, within %s", kp.cert.NotAfter.Format(time.RFC3339), renewBefore)
	}
	if kp.cert.Subject.CommonName != spec.commonName {
		return fmt.Errorf("common name is %q, want %q", kp.cert.Subject.CommonName, spec.commonName)
	}
	if !sameSet(kp.cert.Subject.Organization, spec.orgs) {
		return fmt.Errorf("organizations are %q, want %q", kp.cert.Subject.Organization, spec.orgs)
	}
	if got := hostsOf(kp.cert); !got.equal(spec.hosts) {
		return fmt.Errorf("names are %v %v, want %v %v", got.dns, got.ips, spec.hosts.dns, spec.hosts.ips)
	}
	return nil
}

// sameSet reports whether a and b hold the same strings, ignoring order
// and repetition.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

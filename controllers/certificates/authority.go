package certificates

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"os"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Signing policy, as upstream's csrsigning: validity starts backdate
// before now to tolerate clock skew, except that a certificate living less
// than short is not backdated at its end.
const (
	backdate = 5 * time.Minute
	short    = 8 * time.Hour
)

// CA is a certificate authority: its certificate and private key.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// LoadCA reads a CA certificate and its private key (PEM files) and checks
// that they belong together and can sign certificates.
func LoadCA(certFile, keyFile string) (*CA, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("reading the signing certificate: %w", err)
	}
	certs, err := cert.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("signing certificate %s: %w", certFile, err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("reading the signing key: %w", err)
	}
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", keyFile, err) // the parser's errors never quote the key
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("signing key %s: unsupported key type %T", keyFile, key)
	}
	ca := &CA{Cert: certs[0], Key: signer}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(ca.Cert.PublicKey) {
		return nil, fmt.Errorf("signing key %s does not match certificate %s", keyFile, certFile)
	}
	if !ca.Cert.IsCA || ca.Cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("signing certificate %s is not a CA certificate", certFile)
	}
	return ca, nil
}

// Sign issues a certificate (PEM) for req with the given usages, valid for
// ttl from now (backdated, and never beyond the CA's own expiry). It keeps
// the request's subject and subject alternative names and drops its other
// extensions, as upstream's permissive signing policy.
func (ca *CA) Sign(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage, ttl time.Duration, now time.Time) ([]byte, error) {
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("unable to verify certificate request signature: %w", err)
	}
	keyUsage, extKeyUsage, err := x509Usages(usages)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               req.Subject,
		DNSNames:              req.DNSNames,
		IPAddresses:           req.IPAddresses,
		EmailAddresses:        req.EmailAddresses,
		URIs:                  req.URIs,
		KeyUsage:              keyUsage,
		ExtKeyUsage:           extKeyUsage,
		BasicConstraintsValid: true,
		NotBefore:             now.Add(-backdate),
	}
	if ttl < short {
		tmpl.NotAfter = now.Add(ttl)
	} else {
		tmpl.NotAfter = tmpl.NotBefore.Add(ttl)
	}
	if !now.Before(ca.Cert.NotAfter) {
		return nil, fmt.Errorf("refusing to sign a certificate that expired in the past: NotAfter=%v", ca.Cert.NotAfter)
	}
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, req.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("failed to sign certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: cert.CertificateBlockType, Bytes: der}), nil
}

var keyUsages = map[certificatesv1.KeyUsage]x509.KeyUsage{
	certificatesv1.UsageSigning:           x509.KeyUsageDigitalSignature,
	certificatesv1.UsageDigitalSignature:  x509.KeyUsageDigitalSignature,
	certificatesv1.UsageContentCommitment: x509.KeyUsageContentCommitment,
	certificatesv1.UsageKeyEncipherment:   x509.KeyUsageKeyEncipherment,
	certificatesv1.UsageKeyAgreement:      x509.KeyUsageKeyAgreement,
	certificatesv1.UsageDataEncipherment:  x509.KeyUsageDataEncipherment,
	certificatesv1.UsageCertSign:          x509.KeyUsageCertSign,
	certificatesv1.UsageCRLSign:           x509.KeyUsageCRLSign,
	certificatesv1.UsageEncipherOnly:      x509.KeyUsageEncipherOnly,
	certificatesv1.UsageDecipherOnly:      x509.KeyUsageDecipherOnly,
}

var extKeyUsages = map[certificatesv1.KeyUsage]x509.ExtKeyUsage{
	certificatesv1.UsageAny:             x509.ExtKeyUsageAny,
	certificatesv1.UsageServerAuth:      x509.ExtKeyUsageServerAuth,
	certificatesv1.UsageClientAuth:      x509.ExtKeyUsageClientAuth,
	certificatesv1.UsageCodeSigning:     x509.ExtKeyUsageCodeSigning,
	certificatesv1.UsageEmailProtection: x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageSMIME:           x509.ExtKeyUsageEmailProtection,
	certificatesv1.UsageIPsecEndSystem:  x509.ExtKeyUsageIPSECEndSystem,
	certificatesv1.UsageIPsecTunnel:     x509.ExtKeyUsageIPSECTunnel,
	certificatesv1.UsageIPsecUser:       x509.ExtKeyUsageIPSECUser,
	certificatesv1.UsageTimestamping:    x509.ExtKeyUsageTimeStamping,
	certificatesv1.UsageOCSPSigning:     x509.ExtKeyUsageOCSPSigning,
	certificatesv1.UsageMicrosoftSGC:    x509.ExtKeyUsageMicrosoftServerGatedCrypto,
	certificatesv1.UsageNetscapeSGC:     x509.ExtKeyUsageNetscapeServerGatedCrypto,
}

// x509Usages translates certificates.k8s.io usages into a key usage and
// sorted, distinct extended key usages.
func x509Usages(usages []certificatesv1.KeyUsage) (x509.KeyUsage, []x509.ExtKeyUsage, error) {
	var ku x509.KeyUsage
	var unknown []certificatesv1.KeyUsage
	seen := map[x509.ExtKeyUsage]bool{}
	for _, u := range usages {
		if k, ok := keyUsages[u]; ok {
			ku |= k
		} else if e, ok := extKeyUsages[u]; ok {
			seen[e] = true
		} else {
			unknown = append(unknown, u)
		}
	}
	if len(unknown) > 0 {
		return 0, nil, fmt.Errorf("unrecognized usage values: %q", unknown)
	}
	eku := slices.Sorted(maps.Keys(seen))
	return ku, eku, nil
}

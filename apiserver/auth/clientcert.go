package auth

import (
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// ClientCert authenticates a request by its TLS client certificate, as
// upstream's x509 authenticator: the server asks for a certificate in the
// handshake without verifying it (tls.RequestClientCert), and this
// verifies it against Roots for client authentication, so a certificate
// of another CA or an expired one is an error (a 401), not a failed
// handshake. The common name is the user and the organizations are the
// groups; a certificate without a common name names no user (ok false),
// as upstream's CommonNameUserConversion.
//
// A verified certificate is remembered, with the intermediates the client
// sent (a SHA-256 over them all), until its chain expires, so the requests
// of one client do not verify a signature each. Roots must not change
// once requests are served: what was verified against them stays
// remembered.
type ClientCert struct {
	Roots *x509.CertPool
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu       sync.Mutex
	verified map[[sha256.Size]byte]verifiedCert
}

// verifiedCert is a certificate that verified, and when its chain holds.
type verifiedCert struct {
	user                User
	notBefore, notAfter time.Time
}

// maxVerifiedCerts bounds ClientCert's memory; it forgets them all when full.
const maxVerifiedCerts = 4096

// Authenticate implements Authenticator.
func (c *ClientCert) Authenticate(r *http.Request) (User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 || c.Roots == nil {
		return User{}, false, nil
	}
	leaf := r.TLS.PeerCertificates[0]
	now := time.Now()
	if c.Now != nil {
		now = c.Now()
	}
	var sum [sha256.Size]byte
	if len(r.TLS.PeerCertificates) == 1 {
		sum = sha256.Sum256(leaf.Raw)
	} else {
		h := sha256.New()
		for _, cert := range r.TLS.PeerCertificates {
			h.Write(cert.Raw)
		}
		h.Sum(sum[:0])
	}
	c.mu.Lock()
	v, ok := c.verified[sum]
	c.mu.Unlock()
	if !ok || now.Before(v.notBefore) || now.After(v.notAfter) {
		opts := x509.VerifyOptions{Roots: c.Roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		if len(r.TLS.PeerCertificates) > 1 {
			opts.Intermediates = x509.NewCertPool()
			for _, ic := range r.TLS.PeerCertificates[1:] {
				opts.Intermediates.AddCert(ic)
			}
		}
		chains, err := leaf.Verify(opts)
		if err != nil {
			return User{}, false, fmt.Errorf("verifying certificate SN=%d, CN=%q failed: %w", leaf.SerialNumber, leaf.Subject.CommonName, err)
		}
		v = verifiedCert{notBefore: leaf.NotBefore, notAfter: leaf.NotAfter}
		for _, cert := range chains[0] {
			if cert.NotBefore.After(v.notBefore) {
				v.notBefore = cert.NotBefore
			}
			if cert.NotAfter.Before(v.notAfter) {
				v.notAfter = cert.NotAfter
			}
		}
		if leaf.Subject.CommonName != "" {
			v.user = User{Name: leaf.Subject.CommonName, Groups: append([]string(nil), leaf.Subject.Organization...)}
		}
		c.mu.Lock()
		if c.verified == nil || len(c.verified) >= maxVerifiedCerts {
			c.verified = map[[sha256.Size]byte]verifiedCert{}
		}
		c.verified[sum] = v
		c.mu.Unlock()
	}
	if v.user.Name == "" {
		return User{}, false, nil
	}
	return User{Name: v.user.Name, Groups: append([]string(nil), v.user.Groups...)}, true, nil
}

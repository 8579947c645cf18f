package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"slices"
)

// ServerTLSConfig returns a tls.Config that serves the serving certificate
// and requests, but does not require, a client certificate, verifying one
// that is sent against the CA; a client without one may still authenticate
// with a bearer token. TLS 1.2 is the minimum. NextProtos is left empty so
// http.Server offers HTTP/2 and HTTP/1.1 itself.
func (b *Bundle) ServerTLSConfig() (*tls.Config, error) {
	if b == nil || b.CA == nil {
		return nil, errors.New("pki: ServerTLSConfig on a Bundle not made by Ensure")
	}
	cert, err := tls.LoadX509KeyPair(b.ServingCertFile, b.ServingKeyFile)
	if err != nil {
		return nil, fmt.Errorf("loading serving certificate %s: %w", b.ServingCertFile, err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    b.CA,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// UserFromCert returns the user name and groups in a verified client
// certificate: the subject's common name and organizations, as Kubernetes
// reads them. The caller must have verified cert against the CA.
func UserFromCert(cert *x509.Certificate) (name string, groups []string) {
	if cert == nil {
		return "", nil
	}
	return cert.Subject.CommonName, slices.Clone(cert.Subject.Organization)
}

// UserFromRequest returns the user of a request that presented a client
// certificate the server verified (with ServerTLSConfig), and false when the
// request carried none or its certificate names no user.
func UserFromRequest(r *http.Request) (name string, groups []string, ok bool) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return "", nil, false
	}
	name, groups = UserFromCert(r.TLS.VerifiedChains[0][0])
	if name == "" {
		return "", nil, false
	}
	return name, groups, true
}

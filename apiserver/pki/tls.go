package pki

import (
	"crypto/tls"
	"errors"
	"fmt"
)

// ServerTLSConfig returns a tls.Config that serves the serving certificate
// and asks for, but neither requires nor verifies, a client certificate,
// naming the CA as the one to present (ClientCAs), as upstream's API
// server: the authenticator verifies it (auth.ClientCert), so a bad one is
// a 401 rather than a failed handshake, and a client without one may still
// authenticate with a bearer token. TLS 1.2 is the minimum. NextProtos is
// left empty so http.Server offers HTTP/2 and HTTP/1.1 itself.
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
		ClientAuth:   tls.RequestClientCert,
		ClientCAs:    b.CA,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

package natsserver

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/kubebus/kubebus/bus/busauth"
)

// certAuth authenticates a client by the certificate the TLS handshake
// verified, or an in-process client by the token this server issued it,
// and registers it with the permissions busauth grants.
type certAuth struct {
	log       *slog.Logger
	inProcess *sync.Map // token -> busauth.Identity
}

// Check implements server.Authentication.
func (a certAuth) Check(c server.ClientAuthentication) bool {
	if c.Kind() != server.CLIENT {
		return false
	}
	var id busauth.Identity
	if leaf := verifiedLeaf(c.GetTLSConnectionState()); leaf != nil {
		id = busauth.Identity{User: leaf.Subject.CommonName, Groups: leaf.Subject.Organization}
	} else if v, ok := a.inProcessIdentity(c); ok {
		id = v
	} else {
		a.log.Info("nats connection refused: no verified client certificate", "remote", c.RemoteAddress())
		return false
	}
	id.Conn = c.GetOpts().Name
	perms, err := busauth.Permissions(id)
	if err != nil {
		a.log.Info("nats connection refused", "remote", c.RemoteAddress(), "err", err)
		return false
	}
	c.RegisterUser(&server.User{Username: id.User, Permissions: perms})
	return true
}

// routeAuth admits a cluster route only from a member presenting a
// verified certificate of busauth.RouteUser: every component holds a
// certificate of the cluster CA, and a route sees every message.
type routeAuth struct{ log *slog.Logger }

// Check implements server.Authentication.
func (a routeAuth) Check(c server.ClientAuthentication) bool {
	if c.Kind() != server.ROUTER {
		return false
	}
	leaf := verifiedLeaf(c.GetTLSConnectionState())
	if leaf == nil || leaf.Subject.CommonName != busauth.RouteUser {
		a.log.Info("nats route refused: not a route certificate", "remote", c.RemoteAddress())
		return false
	}
	return true
}

// RouteTLS returns a member's side of the cluster routes' mutual TLS from
// PEM files: the CA, the certificate it serves its route port with, and
// the certificate of busauth.RouteUser (client use) it presents when it
// dials another member's route.
func RouteTLS(caFile, servingCertFile, servingKeyFile, routeCertFile, routeKeyFile string) (*tls.Config, error) {
	cfg, err := ServerTLS(caFile, servingCertFile, servingKeyFile)
	if err != nil {
		return nil, err
	}
	route, err := tls.LoadX509KeyPair(routeCertFile, routeKeyFile)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: route certificate: %w", err)
	}
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &route, nil }
	return cfg, nil
}

// inProcessIdentity is the identity of an in-process client (one whose
// connection is a pipe inside this process, which nothing outside it can
// open) that presents a token this server issued.
func (a certAuth) inProcessIdentity(c server.ClientAuthentication) (busauth.Identity, bool) {
	addr := c.RemoteAddress()
	if addr == nil || addr.Network() != "pipe" || a.inProcess == nil {
		return busauth.Identity{}, false
	}
	tok := c.GetOpts().Token
	if tok == "" {
		return busauth.Identity{}, false
	}
	v, ok := a.inProcess.Load(tok)
	if !ok {
		return busauth.Identity{}, false
	}
	return v.(busauth.Identity), true
}

// verifiedLeaf is the client certificate the handshake verified against
// the CA, or nil.
func verifiedLeaf(st *tls.ConnectionState) *x509.Certificate {
	if st == nil || len(st.VerifiedChains) == 0 || len(st.VerifiedChains[0]) == 0 {
		return nil
	}
	return st.VerifiedChains[0][0]
}

// ServerTLS returns the server side of the bus's mutual TLS from PEM
// files: the server's certificate and key, and the CA that signs clients'
// certificates (also trusted when dialling cluster routes).
func ServerTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: reading the CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("embedded nats: the CA file holds no PEM certificate")
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: serving certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool, RootCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}, nil
}

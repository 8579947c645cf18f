// Package natstest runs kubebus's embedded NATS server in tests as kubebus
// serves it: on a loopback port, with mutual TLS from a temporary cluster
// CA, each client a bus identity whose certificate that CA issued.
package natstest

import (
	"crypto/tls"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebus/kubebus/apiserver/pki"
	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/natsserver"
)

// CA is a temporary cluster CA and the NATS server's side of the mutual
// TLS.
type CA struct {
	*pki.Bundle
	// TLS is the server's TLS configuration, for natsserver.Config.
	TLS *tls.Config
}

// NewCA makes a cluster CA under a temporary directory and a NATS serving
// certificate for 127.0.0.1 and localhost.
func NewCA(t testing.TB) *CA {
	t.Helper()
	hosts := []string{"127.0.0.1", "localhost"}
	b, err := pki.Ensure(pki.Config{Dir: filepath.Join(t.TempDir(), "pki"), Hosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := b.IssueServing("kubebus-nats", hosts)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := natsserver.ServerTLS(b.CAFile, cert, key)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Bundle: b, TLS: cfg}
}

// Creds issues bus credentials for user in groups.
func (c *CA) Creds(t testing.TB, user string, groups ...string) bus.Credentials {
	t.Helper()
	cert, key, err := c.IssueClient(user, groups)
	if err != nil {
		t.Fatal(err)
	}
	return bus.Credentials{CAFile: c.CAFile, CertFile: cert, KeyFile: key}
}

// Server is a running embedded server and its CA.
type Server struct {
	*natsserver.Server
	CA *CA
}

// Start starts a server with a new CA, a temporary store and a discarded
// log, shut down when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	ca := NewCA(t)
	s, err := natsserver.Start(natsserver.Config{StoreDir: t.TempDir(), Port: -1, TLS: ca.TLS,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return &Server{Server: s, CA: ca}
}

// Connect connects as user in groups with bus.ConnectOnce, following (so
// a refused identity fails the test at once and a connection, once made,
// reconnects), and closes the connection when the test ends.
func (s *Server) Connect(t testing.TB, user string, groups ...string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, js, err := bus.ConnectOnce(s.URL(), t.Name(), s.CA.Creds(t, user, groups...), true)
	if err != nil {
		t.Fatalf("connecting to the bus as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	return nc, js
}

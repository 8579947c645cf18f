package bus

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Credentials are a component's bus credentials: the cluster CA that signs
// the NATS server's certificate, and the client certificate and key whose
// subject (CN the user, O the groups, as the API server reads them) is the
// component's bus identity. Each of the three comes from its file, or from
// its PEM data when the file is empty (a kubeconfig may embed them).
//
// A component in the process that runs the NATS server (kubebus server)
// connects in process instead: InProcess is that server, and Token the
// secret it issued for the identity User (natsserver.Server.InProcess).
// Such a connection never leaves the process, so it has no TLS.
type Credentials struct {
	CAFile, CertFile, KeyFile string
	CAData, CertData, KeyData []byte

	InProcess   nats.InProcessConnProvider
	Token, User string
}

// TLSConfig returns the client side of the bus's mutual TLS: the server
// verified against the CA, the client certificate presented, TLS 1.2 or
// newer. It also returns the certificate's common name, the bus user.
func (c Credentials) TLSConfig() (*tls.Config, string, error) {
	ca, err := pemOf("CA certificate", c.CAFile, c.CAData)
	if err != nil {
		return nil, "", err
	}
	certPEM, err := pemOf("client certificate", c.CertFile, c.CertData)
	if err != nil {
		return nil, "", err
	}
	keyPEM, err := pemOf("client key", c.KeyFile, c.KeyData)
	if err != nil {
		return nil, "", err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, "", errors.New("bus credentials: the CA holds no PEM certificate")
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, "", fmt.Errorf("bus credentials: client certificate and key: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, "", fmt.Errorf("bus credentials: client certificate: %w", err)
	}
	if leaf.Subject.CommonName == "" {
		return nil, "", errors.New("bus credentials: the client certificate names no user (empty CN)")
	}
	pair.Leaf = leaf
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, leaf.Subject.CommonName, nil
}

// pemOf reads file, or returns data when file is empty.
func pemOf(what, file string, data []byte) ([]byte, error) {
	if file == "" {
		if len(data) == 0 {
			return nil, fmt.Errorf("bus credentials: no %s", what)
		}
		return data, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("bus credentials: reading the %s: %w", what, err)
	}
	return b, nil
}

// InboxPrefix is the inbox prefix of a bus user: replies to its requests
// and the messages its pull consumers deliver go to subjects under
// InboxPrefix(user)+".", which the server lets only that user subscribe to
// (see bus/busauth). The user name is one escaped token, so no user's
// prefix is another's.
func InboxPrefix(user string) string { return "_INBOX_" + Escape(user) }

// options are the connection options every bus client uses: mutual TLS
// with creds and the user's own inbox prefix.
func (c Credentials) options(name string) ([]nats.Option, error) {
	if c.InProcess != nil {
		if c.Token == "" || c.User == "" {
			return nil, errors.New("bus credentials: an in-process connection needs its token and user")
		}
		return []nats.Option{nats.Name(name), nats.InProcessServer(c.InProcess), nats.Token(c.Token), nats.CustomInboxPrefix(InboxPrefix(c.User))}, nil
	}
	cfg, user, err := c.TLSConfig()
	if err != nil {
		return nil, err
	}
	return []nats.Option{nats.Name(name), nats.Secure(cfg), nats.CustomInboxPrefix(InboxPrefix(user))}, nil
}

// Connect dials NATS with creds and reconnects that never give up (a NATS
// restart must not end a component), and returns the connection and its
// JetStream context. The URL may be nats:// or tls://: the connection is
// TLS either way.
func Connect(url, name string, creds Credentials) (*nats.Conn, jetstream.JetStream, error) {
	opts, err := creds.options(name)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to nats %s: %w", url, err)
	}
	opts = append(opts, nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond),
		nats.RetryOnFailedConnect(true), nats.ReconnectBufSize(64<<20))
	return dial(url, opts)
}

// ConnectOnce is Connect for a tool: it fails at once when the server is
// not there (or refuses the credentials); once connected, it reconnects
// forever when follow is set, and a few times otherwise.
func ConnectOnce(url, name string, creds Credentials, follow bool) (*nats.Conn, jetstream.JetStream, error) {
	opts, err := creds.options(name)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to nats %s: %w", url, err)
	}
	opts = append(opts, nats.ReconnectWait(250*time.Millisecond))
	if follow {
		opts = append(opts, nats.MaxReconnects(-1))
	}
	return dial(url, opts)
}

func dial(url string, opts []nats.Option) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to nats %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("opening jetstream: %w", err)
	}
	return nc, js, nil
}

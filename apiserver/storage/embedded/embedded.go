// Package embedded runs an etcd member inside the kubebus process: the one
// member of the all-in-one cluster, or one member of a cluster of several.
// It listens on 127.0.0.1 unless told otherwise.
//
// With Config.TLS the member serves https to clients and to peers and
// requires from both a certificate that chains to the CA it is given, as an
// upstream member run with --client-cert-auth and --peer-client-cert-auth.
// Without it the member speaks plain http and authenticates nobody; only
// tests use that.
package embedded

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/membership"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap"
)

// DefaultName is the member name when Config.Name is empty; single-member
// data directories made before names were configurable carry it.
const DefaultName = "kubebus"

// Config says where the member keeps its data, where it listens and which
// cluster it belongs to.
type Config struct {
	Dir string // data directory
	// Name is the member's name in the cluster (DefaultName when empty).
	Name string
	// Host is the IP address the member listens on and advertises to
	// clients and peers ("127.0.0.1" when empty).
	Host       string
	ClientPort int // 0 picks a free port
	PeerPort   int // 0 picks a free port; give it when InitialCluster is set
	// InitialCluster lists the members of a new cluster as etcd's
	// --initial-cluster does: "a=https://127.0.0.1:2380,b=https://...".
	// It must name this member with its peer URL. Empty means this member
	// alone. A member that already has data ignores it.
	InitialCluster string
	// TLS, when set, makes the member serve https and require client and
	// peer certificates. Nil means plain http with no authentication.
	TLS *TLS
	// ProgressNotifyInterval makes etcd send progress marks on idle watches.
	ProgressNotifyInterval time.Duration
	// CompactionRetention is etcd's periodic compaction window ("5m" when
	// empty, "0" to keep all history).
	CompactionRetention string
}

// TLS is a member's certificates, as PEM files.
type TLS struct {
	// CertFile and KeyFile are served to clients.
	CertFile, KeyFile string
	// ClientCAFile holds the CA a client's certificate must chain to.
	ClientCAFile string
	// PeerCertFile and PeerKeyFile are served to peers, and presented to
	// them when dialling unless PeerClientCertFile is set; the certificate
	// then needs both the server and the client auth usage.
	PeerCertFile, PeerKeyFile string
	// PeerClientCertFile and PeerClientKeyFile, optional, are presented to
	// peers when dialling them.
	PeerClientCertFile, PeerClientKeyFile string
	// PeerCAFile holds the CA a peer's certificate must chain to.
	PeerCAFile string
}

// validate checks that every required file is named and loads, so that a
// bad file is reported by name before etcd starts.
func (t *TLS) validate() error {
	pairs := []struct{ what, cert, key string }{
		{"client serving", t.CertFile, t.KeyFile},
		{"peer", t.PeerCertFile, t.PeerKeyFile},
	}
	if t.PeerClientCertFile != "" || t.PeerClientKeyFile != "" {
		pairs = append(pairs, struct{ what, cert, key string }{"peer client", t.PeerClientCertFile, t.PeerClientKeyFile})
	}
	for _, p := range pairs {
		if p.cert == "" || p.key == "" {
			return fmt.Errorf("%s certificate: both a certificate and a key file are needed", p.what)
		}
		if _, err := tls.LoadX509KeyPair(p.cert, p.key); err != nil {
			return fmt.Errorf("%s certificate %s with key %s: %w", p.what, p.cert, p.key, err)
		}
	}
	for _, ca := range []struct{ what, file string }{{"client CA", t.ClientCAFile}, {"peer CA", t.PeerCAFile}} {
		if ca.file == "" {
			return fmt.Errorf("no %s file", ca.what)
		}
		pem, err := os.ReadFile(ca.file)
		if err != nil {
			return fmt.Errorf("reading %s: %w", ca.what, err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return fmt.Errorf("%s file %s holds no PEM certificate", ca.what, ca.file)
		}
	}
	return nil
}

// Etcd is a running member.
type Etcd struct {
	e *embed.Etcd
	// Endpoint is the client URL, e.g. https://127.0.0.1:2379 (http://
	// without TLS).
	Endpoint string
}

// Client returns a client of this member that does not leave the process:
// no connection, no TLS, the requests go straight to the member's server
// (etcd's v3client). The all-in-one's API server uses it. Close it when
// done.
func (e *Etcd) Client() *clientv3.Client { return v3client.New(e.e.Server) }

// Start starts the member and waits until it serves, which for a member of
// several is once a leader is elected: start the others meanwhile.
func Start(ctx context.Context, cfg Config) (*Etcd, error) {
	ec, err := embedConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: %w", err)
	}
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("starting embedded etcd in %s: %w", cfg.Dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd failed: %w", err)
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, errors.New("embedded etcd: not ready after 60s")
	}
	if err := refreshPeerURLs(ctx, e, ec.AdvertisePeerUrls); err != nil {
		e.Close()
		return nil, fmt.Errorf("embedded etcd: updating its peer URLs: %w", err)
	}
	return &Etcd{e: e, Endpoint: ec.AdvertiseClientUrls[0].Scheme + "://" + e.Clients[0].Addr().String()}, nil
}

// refreshPeerURLs records the member's advertised peer URLs in the cluster
// when they differ from those it last ran with, as when TLS is turned on
// for a data directory made without it: etcd keeps a member's peer URLs
// from when it joined until they are updated. A picked port (0) is not
// recorded.
func refreshPeerURLs(ctx context.Context, e *embed.Etcd, advertised []url.URL) error {
	var want []string
	for _, u := range advertised {
		if u.Port() == "0" {
			return nil
		}
		want = append(want, u.String())
	}
	s := e.Server
	m := s.Cluster().Member(s.MemberID())
	if m == nil || slices.Equal(m.PeerURLs, want) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := s.UpdateMember(ctx, membership.Member{ID: m.ID, RaftAttributes: membership.RaftAttributes{PeerURLs: want, IsLearner: m.IsLearner}})
	return err
}

// embedConfig turns cfg into etcd's configuration.
func embedConfig(cfg Config) (*embed.Config, error) {
	if cfg.Dir == "" {
		return nil, errors.New("no data directory")
	}
	host := cfg.Host
	if host == "" {
		host = "127.0.0.1"
	}
	if net.ParseIP(host) == nil {
		return nil, fmt.Errorf("host %q is not an IP address", host)
	}
	ec := embed.NewConfig()
	ec.Name = cfg.Name
	if ec.Name == "" {
		ec.Name = DefaultName
	}
	ec.Dir = cfg.Dir
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	ec.LogLevel = "error"
	scheme := "http"
	if cfg.TLS != nil {
		if err := cfg.TLS.validate(); err != nil {
			return nil, err
		}
		scheme = "https"
		t := cfg.TLS
		ec.ClientTLSInfo = transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.ClientCAFile, ClientCertAuth: true}
		ec.PeerTLSInfo = transport.TLSInfo{
			CertFile: t.PeerCertFile, KeyFile: t.PeerKeyFile,
			ClientCertFile: t.PeerClientCertFile, ClientKeyFile: t.PeerClientKeyFile,
			TrustedCAFile: t.PeerCAFile, ClientCertAuth: true,
		}
	}
	// kubebus speaks gRPC only. The JSON gateway would also dial the
	// member with its serving certificate as a client certificate.
	ec.EnableGRPCGateway = false
	hostPort := func(port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
	cu := url.URL{Scheme: scheme, Host: hostPort(cfg.ClientPort)}
	pu := url.URL{Scheme: scheme, Host: hostPort(cfg.PeerPort)}
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	ec.InitialCluster = cfg.InitialCluster
	if ec.InitialCluster == "" {
		ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	}
	ec.AutoCompactionMode = "periodic"
	ec.AutoCompactionRetention = cfg.CompactionRetention
	if ec.AutoCompactionRetention == "" {
		ec.AutoCompactionRetention = "5m"
	}
	ec.QuotaBackendBytes = 8 << 30
	if cfg.ProgressNotifyInterval > 0 {
		ec.WatchProgressNotifyInterval = cfg.ProgressNotifyInterval
	}
	return ec, nil
}

// Close stops the member.
func (e *Etcd) Close() { e.e.Close() }

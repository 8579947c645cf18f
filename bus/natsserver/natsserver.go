// Package natsserver runs a NATS server with JetStream inside the kubebus
// process for the all-in-one cluster. It listens on loopback only, serves
// TLS only, requires every client to present a certificate signed by the
// cluster CA, and gives each connection the permissions bus/busauth grants
// the identity in that certificate; other identities are refused.
package natsserver

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/busauth"
)

// Config says where JetStream keeps its data, which port to use and how
// clients (and cluster members) are authenticated.
type Config struct {
	StoreDir string
	Port     int // 0 picks the default 4222; -1 picks a random free port
	Host     string
	// MaxMemory bounds what JetStream may keep in memory-backed streams
	// on this server (default DefaultMaxMemory). The all-in-one's
	// KUBE_NODEPODS is one: its byte limit (bus.StreamLimits.NodeMaxBytes)
	// must fit.
	MaxMemory int64
	// MaxStore bounds what JetStream may keep on disk (0: NATS's default,
	// three quarters of the free space at start). Keep it at least the
	// sum of the streams' byte limits, or the streams cannot be made.
	MaxStore int64
	// TLS is required: the server's certificate (Certificates or
	// GetCertificate) and the CA clients' certificates must chain to
	// (ClientCAs). Start requires and verifies a client certificate
	// whatever ClientAuth says. ServerTLS builds one from files.
	TLS *tls.Config
	// Name is the server's name (default "kubebus"); members of a cluster
	// need distinct names.
	Name string
	// Cluster, when its Port is set, makes this server a member of a NATS
	// cluster.
	Cluster ClusterConfig
	// ReadyTimeout bounds how long Start waits for the server to accept
	// connections (default 30s); a member of a cluster is ready once its
	// routes are up.
	ReadyTimeout time.Duration
	// Logger receives refused connections (default slog.Default()).
	Logger *slog.Logger
}

// ClusterConfig configures the routes between the members of a NATS
// cluster. Routes are mutual TLS too: each member presents TLS's
// certificate and verifies the other's against TLS's ClientCAs (and
// RootCAs when it dials).
type ClusterConfig struct {
	Name string // the cluster's name, the same on every member
	Host string // default Config.Host
	Port int    // 0: no cluster; -1: a random free port
	// Routes are the other members' route URLs, e.g.
	// nats-route://127.0.0.1:6222.
	Routes []string
	// TLS is required with a Port (RouteTLS builds one): routes are
	// admitted only from members presenting a busauth.RouteUser
	// certificate.
	TLS *tls.Config
}

// DefaultMaxMemory is the default JetStream memory storage limit.
const DefaultMaxMemory = 256 << 20

// tlsTimeout is how long a client has for its TLS handshake, in seconds.
const tlsTimeout = 5

// jetStreamCheck is how often a server whose JetStream turned itself off
// (NATS does when its disk is full) tries to turn it on again.
const jetStreamCheck = 2 * time.Second

// Server is a running embedded NATS server.
type Server struct {
	s      *server.Server
	log    *natsLog
	cfg    Config
	tokens *sync.Map // in-process tokens -> busauth.Identity
	stop   chan struct{}
	done   chan struct{}
}

// Start starts the server and waits until it accepts connections.
func Start(cfg Config) (*Server, error) {
	tokens := &sync.Map{}
	opts, err := cfg.options(tokens)
	if err != nil {
		return nil, err
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("configuring embedded nats: %w", err)
	}
	nl := &natsLog{log: cfg.logger().With("component", "nats"), now: time.Now}
	s.SetLoggerV2(nl, false, false, false)
	go s.Start()
	wait := cfg.ReadyTimeout
	if wait <= 0 {
		wait = 30 * time.Second
	}
	if !s.ReadyForConnections(wait) {
		s.Shutdown()
		return nil, fmt.Errorf("embedded nats: not ready after %s", wait)
	}
	srv := &Server{s: s, log: nl, cfg: cfg, tokens: tokens, stop: make(chan struct{}), done: make(chan struct{})}
	go srv.keepJetStream(opts)
	return srv, nil
}

// minFreeToRestart is the free space the store's file system needs before
// a JetStream whose writes failed for want of space is restarted.
const minFreeToRestart = 32 << 20

// keepJetStream brings JetStream back after its store failed. A stream
// whose write failed for want of space refuses every later write until it
// is loaded again, so once the file system has room JetStream is shut down
// (its state kept) and started again, which reloads the streams; the
// publisher then republishes what was never acknowledged. JetStream that
// turned itself off is turned on again the same way.
func (s *Server) keepJetStream(opts *server.Options) {
	defer close(s.done)
	log := s.cfg.logger().With("component", "nats")
	t := time.NewTicker(jetStreamCheck)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		enabled := s.s.JetStreamEnabled()
		if enabled && (s.log.storeErr() == nil || freeBytes(opts.StoreDir) < minFreeToRestart) {
			continue
		}
		if enabled {
			log.Info("the bus's store has room again; restarting JetStream to reload its streams")
			if err := s.s.ShutdownJetStream(); err != nil {
				log.Error("stopping JetStream", "err", err)
				continue
			}
		}
		err := s.s.EnableJetStream(&server.JetStreamConfig{StoreDir: opts.StoreDir, MaxMemory: opts.JetStreamMaxMemory, MaxStore: opts.JetStreamMaxStore})
		if err != nil {
			log.Error("JetStream is off and does not start yet", "err", err)
			continue
		}
		s.log.clearFull()
		log.Info("JetStream is on")
	}
}

// freeBytes is the space left for an unprivileged writer on dir's file
// system (0 when it cannot be read).
func freeBytes(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0
	}
	return int64(st.Bavail) * st.Bsize
}

func (cfg Config) logger() *slog.Logger {
	if cfg.Logger == nil {
		return slog.Default()
	}
	return cfg.Logger
}

func (cfg Config) options(tokens *sync.Map) (*server.Options, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("embedded nats: no store directory")
	}
	if cfg.TLS == nil {
		return nil, errors.New("embedded nats: no TLS configuration (the bus serves mutual TLS only)")
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.Name == "" {
		cfg.Name = "kubebus"
	}
	if cfg.MaxMemory <= 0 {
		cfg.MaxMemory = DefaultMaxMemory
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	opts := &server.Options{
		ServerName: cfg.Name,
		Host:       cfg.Host,
		Port:       cfg.Port,
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: 8 << 20,

		TLS:        true,
		TLSVerify:  true,
		TLSConfig:  mutual(cfg.TLS),
		TLSTimeout: tlsTimeout,
		// Who the verified certificate names decides what it may do.
		CustomClientAuthentication: certAuth{log: cfg.Logger.With("component", "nats-auth"), inProcess: tokens},

		JetStreamMaxMemory: cfg.MaxMemory,
		JetStreamMaxStore:  cfg.MaxStore,
		// NATS 2.12+ caps a stream at 1,000 consumers unless told
		// otherwise; a cluster has one per node on the node stream and
		// tools (the tap, tests) add their own, so no cap here.
		JetStreamLimits: server.JSLimitOpts{DefaultMaxConsumers: -1},
	}
	if c := cfg.Cluster; c.Port != 0 {
		if c.TLS == nil {
			return nil, errors.New("embedded nats: a cluster needs route TLS")
		}
		if c.Host == "" {
			c.Host = cfg.Host
		}
		opts.Cluster = server.ClusterOpts{Name: c.Name, Host: c.Host, Port: c.Port, TLSConfig: mutual(c.TLS), TLSTimeout: tlsTimeout}
		// Only a member's route certificate opens a route.
		opts.CustomRouterAuthentication = routeAuth{log: cfg.Logger.With("component", "nats-auth")}
		if len(c.Routes) > 0 {
			opts.Routes = server.RoutesFromStr(strings.Join(c.Routes, ","))
		}
	}
	return opts, nil
}

// mutual returns a copy of c that requires and verifies a peer
// certificate, TLS 1.2 or newer.
func mutual(c *tls.Config) *tls.Config {
	c = c.Clone()
	c.ClientAuth = tls.RequireAndVerifyClientCert
	c.MinVersion = max(c.MinVersion, tls.VersionTLS12)
	return c
}

// InProcess returns credentials with which a component of this process
// connects to the server in process, as id: no network and no TLS, so a
// message costs no encryption and no system call, and the same
// permissions as id's certificate would give. The token in them is random
// and only good on an in-process connection.
func (s *Server) InProcess(id busauth.Identity) (bus.Credentials, error) {
	if _, err := busauth.Permissions(id); err != nil {
		return bus.Credentials{}, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return bus.Credentials{}, fmt.Errorf("embedded nats: an in-process token: %w", err)
	}
	tok := hex.EncodeToString(b)
	s.tokens.Store(tok, id)
	return bus.Credentials{InProcess: s.s, Token: tok, User: id.User}, nil
}

// StoreReady reports whether JetStream can write its store: an error names
// a store that ran out of space within the last few seconds, or a
// JetStream that is off. It is a /readyz check.
func (s *Server) StoreReady(context.Context) error {
	if !s.s.JetStreamEnabled() {
		return errors.New("JetStream is off (NATS turns it off when its store fails); it is turned on again once it can be")
	}
	return s.log.storeErr()
}

// URL is the client URL. It says nats://; clients connect with TLS (the
// server requires it, and nats.go upgrades a connection that has a TLS
// configuration).
func (s *Server) URL() string {
	addr := s.s.Addr().(*net.TCPAddr)
	return "nats://" + net.JoinHostPort(addr.IP.String(), strconv.Itoa(addr.Port))
}

// NumRoutes is how many cluster routes the server has.
func (s *Server) NumRoutes() int { return s.s.NumRoutes() }

// ClusterAddr is the address the cluster routes listen on ("" without a
// cluster).
func (s *Server) ClusterAddr() string {
	if a := s.s.ClusterAddr(); a != nil {
		return a.String()
	}
	return ""
}

// Shutdown stops the server and waits for it.
func (s *Server) Shutdown() {
	close(s.stop)
	<-s.done
	s.s.Shutdown()
	s.s.WaitForShutdown()
}

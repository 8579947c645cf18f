// Package natsserver runs a NATS server with JetStream inside the kubebus
// process for the all-in-one cluster. It listens on loopback only.
package natsserver

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Config says where JetStream keeps its data and which port to use.
type Config struct {
	StoreDir string
	Port     int // 0 picks the default 4222; -1 picks a random free port
	Host     string
	// MaxMemory bounds what JetStream may keep in memory-backed streams
	// (default DefaultMaxMemory; kubebus's streams are on disk, so this is a
	// guard, not a budget they use).
	MaxMemory int64
}

// DefaultMaxMemory is the default JetStream memory storage limit.
const DefaultMaxMemory = 256 << 20

// Server is a running embedded NATS server.
type Server struct {
	s *server.Server
}

// Start starts the server and waits until it accepts connections.
func Start(cfg Config) (*Server, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("embedded nats: no store directory")
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.MaxMemory <= 0 {
		cfg.MaxMemory = DefaultMaxMemory
	}
	opts := &server.Options{
		ServerName: "kubebus",
		Host:       cfg.Host,
		Port:       cfg.Port,
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: 8 << 20,

		JetStreamMaxMemory: cfg.MaxMemory,
		// NATS 2.12+ caps a stream at 1,000 consumers unless told
		// otherwise; a cluster has one per node on the node stream and
		// tools (the tap, tests) add their own, so no cap here.
		JetStreamLimits: server.JSLimitOpts{DefaultMaxConsumers: -1},
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("configuring embedded nats: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		return nil, errors.New("embedded nats: not ready after 30s")
	}
	return &Server{s: s}, nil
}

// URL is the client URL.
func (s *Server) URL() string { return s.s.ClientURL() }

// Shutdown stops the server and waits for it.
func (s *Server) Shutdown() {
	s.s.Shutdown()
	s.s.WaitForShutdown()
}

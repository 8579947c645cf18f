package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kubebus/kubebus/bus/informer"
)

// Component names the DNS server's durable consumers on the bus.
const Component = "kube-dns"

// Config configures Run.
type Config struct {
	// JetStream is the bus (bus.Connect). Unused when Services and
	// EndpointSlices are given.
	JetStream jetstream.JetStream
	// Instance distinguishes this server's durable consumers from other
	// replicas' (e.g. the node name).
	Instance string
	// Zone is the cluster domain (DefaultZone when empty); TTL the
	// records' (DefaultTTL when 0).
	Zone string
	TTL  uint32
	// Upstreams are the resolvers other names are forwarded to (host:port).
	Upstreams []string
	// PacketConn (UDP) and Listener (TCP) are where queries arrive; at
	// least one is required. Run closes them.
	PacketConn net.PacketConn
	Listener   net.Listener
	// Services and EndpointSlices, when both set, are informers the process
	// shares and runs (in `kubebus server`); Run then starts none.
	Services       *informer.Informer[*corev1.Service]
	EndpointSlices *informer.Informer[*discoveryv1.EndpointSlice]
	Logger         *slog.Logger
	Metrics        prometheus.Registerer
}

// Run feeds an Index from the bus and answers queries until ctx ends
// (which is not an error).
func Run(ctx context.Context, cfg Config) error {
	if cfg.PacketConn == nil && cfg.Listener == nil {
		return errors.New("dns: no listener")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	services, slices := cfg.Services, cfg.EndpointSlices
	var own []interface{ Run(context.Context) error }
	if services == nil || slices == nil {
		if cfg.JetStream == nil {
			return errors.New("dns: no JetStream connection")
		}
		var err error
		services, err = informer.New(informer.Config[*corev1.Service]{
			JetStream: cfg.JetStream, Component: Component, Instance: cfg.Instance, Resource: "services", Narrow: true,
			New: func() *corev1.Service { return &corev1.Service{} }, Logger: cfg.Logger, Metrics: cfg.Metrics,
		})
		if err != nil {
			return fmt.Errorf("dns: services informer: %w", err)
		}
		slices, err = informer.New(informer.Config[*discoveryv1.EndpointSlice]{
			JetStream: cfg.JetStream, Component: Component, Instance: cfg.Instance, Group: "discovery.k8s.io", Resource: "endpointslices", Narrow: true,
			New: func() *discoveryv1.EndpointSlice { return &discoveryv1.EndpointSlice{} }, Logger: cfg.Logger, Metrics: cfg.Metrics,
		})
		if err != nil {
			return fmt.Errorf("dns: endpointslices informer: %w", err)
		}
		own = append(own, services, slices)
	}
	ix := NewIndex(cfg.Zone, cfg.TTL)
	Feed(ix, services, slices)
	srv := &Server{Index: ix, Upstreams: cfg.Upstreams, Logger: cfg.Logger,
		Ready: func() bool { return services.HasSynced() && slices.HasSynced() }}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, len(own))
	for _, inf := range own {
		go func() { errc <- inf.Run(ctx) }()
	}
	level := slog.LevelInfo
	if len(own) == 0 { // inside kubebus server, whose start stays quiet: its ready line says enough
		level = slog.LevelDebug
	}
	cfg.Logger.Log(ctx, level, "dns serving", "zone", ix.Zone(), "upstreams", cfg.Upstreams)
	err := srv.Serve(ctx, cfg.PacketConn, cfg.Listener)
	cancel()
	for range own {
		if e := <-errc; e != nil && err == nil {
			err = e
		}
	}
	return err
}

// Feed keeps ix in step with the informers' caches: their handlers update
// it as each change arrives.
func Feed(ix *Index, services *informer.Informer[*corev1.Service], slices *informer.Informer[*discoveryv1.EndpointSlice]) {
	services.AddHandler(informer.HandlerFuncs[*corev1.Service]{
		AddFunc:    ix.SetService,
		UpdateFunc: func(_, s *corev1.Service) { ix.SetService(s) },
		DeleteFunc: func(s *corev1.Service) { ix.DeleteService(s.Namespace, s.Name) },
	})
	slices.AddHandler(informer.HandlerFuncs[*discoveryv1.EndpointSlice]{
		AddFunc:    ix.SetEndpointSlice,
		UpdateFunc: func(_, s *discoveryv1.EndpointSlice) { ix.SetEndpointSlice(s) },
		DeleteFunc: func(s *discoveryv1.EndpointSlice) { ix.DeleteEndpointSlice(s.Namespace, s.Name) },
	})
}

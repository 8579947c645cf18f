// Package podroutes routes the pod network between nodes on one link, as
// flannel's host-gw backend does: for every other node, a route to its
// podCIDRs through its InternalIP. Desired is the pure part (nodes in,
// routes out); Run keeps a node's routing table in step with the Nodes on
// the bus through an Applier, which owns only the routes it tagged.
package podroutes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/bus/informer"
)

// Route sends the pods of Dst through the node at Via.
type Route struct {
	Dst netip.Prefix
	Via netip.Addr
}

func (r Route) String() string { return r.Dst.String() + " via " + r.Via.String() }

// Desired returns the routes node self needs to reach the other nodes'
// pods: one per podCIDR of every other node that has one and an
// InternalIP of the same family, sorted. Nodes without either are left
// out until they have them.
func Desired(self string, nodes []*corev1.Node) []Route {
	var out []Route
	for _, n := range nodes {
		if n.Name == self {
			continue
		}
		cidrs := n.Spec.PodCIDRs
		if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
			cidrs = []string{n.Spec.PodCIDR}
		}
		for _, c := range cidrs {
			dst, err := netip.ParsePrefix(c)
			if err != nil {
				continue
			}
			if via, ok := internalIP(n, dst.Addr().Is4()); ok {
				out = append(out, Route{Dst: dst.Masked(), Via: via})
			}
		}
	}
	slices.SortFunc(out, func(a, b Route) int {
		if c := a.Dst.Addr().Compare(b.Dst.Addr()); c != 0 {
			return c
		}
		return a.Dst.Bits() - b.Dst.Bits()
	})
	return out
}

func internalIP(n *corev1.Node, v4 bool) (netip.Addr, bool) {
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		if err == nil && ip.Is4() == v4 {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

// Applier makes the routes it owns exactly the given ones.
type Applier interface {
	Apply(ctx context.Context, routes []Route) error
}

// Config configures Run.
type Config struct {
	JetStream jetstream.JetStream
	Node      string // this node's name
	Applier   Applier
	// Period is how often the routes are applied again without a change
	// (default 30s), which puts back a route someone removed.
	Period time.Duration
	Logger *slog.Logger
}

// Run follows the Nodes on the bus and applies Desired after every
// change and every Period, until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	if cfg.JetStream == nil || cfg.Applier == nil || cfg.Node == "" {
		return errors.New("podroutes: JetStream, Applier and Node are required")
	}
	if cfg.Period <= 0 {
		cfg.Period = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	nodes, err := informer.New(informer.Config[*corev1.Node]{
		JetStream: cfg.JetStream, Component: "kube-proxy-routes", Instance: cfg.Node, Resource: "nodes", Narrow: true,
		New: func() *corev1.Node { return &corev1.Node{} }, Logger: cfg.Logger,
	})
	if err != nil {
		return fmt.Errorf("podroutes: nodes informer: %w", err)
	}
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	nodes.AddHandler(informer.HandlerFuncs[*corev1.Node]{
		AddFunc:    func(*corev1.Node) { poke() },
		UpdateFunc: func(_, _ *corev1.Node) { poke() },
		DeleteFunc: func(*corev1.Node) { poke() },
	})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- nodes.Run(ctx) }()
	if err := nodes.WaitForSync(ctx); err != nil {
		cancel()
		return <-errc
	}
	var last []Route
	tick := time.NewTicker(cfg.Period)
	defer tick.Stop()
	for {
		want := Desired(cfg.Node, nodes.List())
		if err := cfg.Applier.Apply(ctx, want); err != nil {
			cfg.Logger.Warn("pod routes not applied", "err", err)
		} else if !slices.Equal(want, last) {
			cfg.Logger.Info("pod routes applied", "routes", len(want))
			last = want
		}
		select {
		case <-ctx.Done():
			cancel()
			if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		case <-changed:
		case <-tick.C:
		}
	}
}

// Package proxy is kubebus's kube-proxy: it caches Services and
// EndpointSlices from the bus, builds the desired ruleset with proxy/rules
// and has an Applier (proxy/nft) program it, rate-limited, and never
// before both caches are synced. A Recorder, when given, is told the bus
// revision each programmed ruleset reflects (programmed.go).
package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/internal/crash"
	"github.com/kubebus/kubebus/proxy/rules"
)

// Applier programs a ruleset (proxy/nft.Applier is one).
type Applier interface {
	Apply(ctx context.Context, rs *rules.Ruleset) error
}

// Defaults of Config.
const (
	DefaultMinSyncPeriod = 100 * time.Millisecond
	DefaultSyncPeriod    = 30 * time.Second
)

// Config configures Run.
type Config struct {
	// JetStream is the bus (bus.Connect).
	JetStream jetstream.JetStream
	// Instance distinguishes this proxy's durable consumers from other
	// nodes' (the node name).
	Instance string
	// Applier programs the rules.
	Applier Applier
	// Families are the IP families programmed, one table each (default:
	// IPv4 only).
	Families []rules.Family
	// MinSyncPeriod is the least time between two syncs; changes that
	// arrive meanwhile are batched into the next one.
	MinSyncPeriod time.Duration
	// SyncPeriod is how often the rules are rebuilt without a change.
	SyncPeriod time.Duration
	Logger     *slog.Logger
	// Metrics, when set, receives the proxy's and informers' metrics.
	Metrics prometheus.Registerer
	// Services and EndpointSlices, when both set, are informers the process
	// shares and runs (in `kubebus server`); the proxy then follows the bus
	// with none of its own.
	Services       *informer.Informer[*corev1.Service]
	EndpointSlices *informer.Informer[*discoveryv1.EndpointSlice]
	// Recorder, when set, records the bus revision the programmed rules
	// reflect after the syncs, from a goroutine of its own and at most
	// once a second (proxy/record writes it into the node's proxy Lease).
	Recorder Recorder
}

func (c *Config) validate() error {
	switch {
	case c.JetStream == nil:
		return errors.New("proxy: no JetStream connection")
	case c.Applier == nil:
		return errors.New("proxy: no applier")
	case c.MinSyncPeriod < 0 || c.SyncPeriod < 0:
		return errors.New("proxy: negative sync period")
	}
	if c.MinSyncPeriod == 0 {
		c.MinSyncPeriod = DefaultMinSyncPeriod
	}
	if c.SyncPeriod == 0 {
		c.SyncPeriod = DefaultSyncPeriod
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if len(c.Families) == 0 {
		c.Families = []rules.Family{rules.IPv4}
	}
	for _, f := range c.Families {
		if f != rules.IPv4 && f != rules.IPv6 {
			return fmt.Errorf("proxy: unknown IP family %d", f)
		}
	}
	return nil
}

// cache is what the proxy reads of an informer.
type cache[T any] interface {
	List() []T
	WaitForSync(ctx context.Context) error
	// Revision is the last bus revision applied to the cache.
	Revision() int64
}

// proxy is one running proxy.
type proxy struct {
	cfg      Config
	services cache[*corev1.Service]
	slices   cache[*discoveryv1.EndpointSlice]
	builders [2]rules.Builder // by family; used by the loop's goroutine only
	changes  chan struct{}
	metrics  *metrics
	mu       sync.Mutex
	triggers []time.Time // EndpointSlice change times not yet programmed
	recorder *recorder   // nil without Config.Recorder
}

// Run caches Services and EndpointSlices, waits for both caches, then
// keeps the rules in step until ctx ends (which is not an error).
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	p := &proxy{cfg: cfg, changes: make(chan struct{}, 1), metrics: newMetrics(cfg.Metrics)}
	if err := crash.Register(cfg.Metrics); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	services, slices := cfg.Services, cfg.EndpointSlices
	var own []interface{ Run(context.Context) error }
	if services == nil || slices == nil {
		var err error
		services, err = informer.New(informer.Config[*corev1.Service]{
			JetStream: cfg.JetStream, Component: "kube-proxy", Instance: cfg.Instance, Resource: "services", Narrow: true,
			New: func() *corev1.Service { return &corev1.Service{} }, Logger: cfg.Logger, Metrics: cfg.Metrics,
		})
		if err != nil {
			return fmt.Errorf("proxy: services informer: %w", err)
		}
		slices, err = informer.New(informer.Config[*discoveryv1.EndpointSlice]{
			JetStream: cfg.JetStream, Component: "kube-proxy", Instance: cfg.Instance, Group: "discovery.k8s.io", Resource: "endpointslices", Narrow: true,
			New: func() *discoveryv1.EndpointSlice { return &discoveryv1.EndpointSlice{} }, Logger: cfg.Logger, Metrics: cfg.Metrics,
		})
		if err != nil {
			return fmt.Errorf("proxy: endpointslices informer: %w", err)
		}
		own = append(own, services, slices)
	}
	p.services, p.slices = services, slices
	services.AddHandler(informer.HandlerFuncs[*corev1.Service]{
		AddFunc:    func(*corev1.Service) { p.changed(time.Time{}) },
		UpdateFunc: func(_, _ *corev1.Service) { p.changed(time.Time{}) },
		DeleteFunc: func(*corev1.Service) { p.changed(time.Time{}) },
	})
	slices.AddHandler(informer.HandlerFuncs[*discoveryv1.EndpointSlice]{
		AddFunc:    func(s *discoveryv1.EndpointSlice) { p.changed(triggerTime(s)) },
		UpdateFunc: func(_, s *discoveryv1.EndpointSlice) { p.changed(triggerTime(s)) },
		DeleteFunc: func(*discoveryv1.EndpointSlice) { p.changed(time.Time{}) },
	})

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, len(own))
	for _, inf := range own {
		go func() { errc <- inf.Run(ctx) }()
	}
	var recording sync.WaitGroup
	if cfg.Recorder != nil {
		p.recorder = newRecorder(cfg.Recorder, &historyHead{js: cfg.JetStream}, cfg.Logger)
		recording.Go(func() { p.recorder.run(ctx) })
	}
	err := p.loop(ctx)
	cancel()
	recording.Wait()
	for range own {
		if e := <-errc; e != nil && err == nil {
			err = e
		}
	}
	return err
}

func (p *proxy) loop(ctx context.Context) error {
	if err := p.services.WaitForSync(ctx); err != nil {
		return nil
	}
	if err := p.slices.WaitForSync(ctx); err != nil {
		return nil
	}
	p.cfg.Logger.Info("proxy caches synced; programming rules")
	var last time.Time
	for {
		if wait := time.Until(last.Add(p.cfg.MinSyncPeriod)); wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
		}
		select { // this sync covers every change so far
		case <-p.changes:
		default:
		}
		last = time.Now()
		// A panic while building or applying the rules is logged with its
		// stack and counted (kubebus_panics_total{component="proxy"}),
		// then handled as a failed sync: retried after MinSyncPeriod.
		if err := crash.Do(p.cfg.Logger, "proxy", "sync", "", func() error { return p.sync(ctx) }); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			p.metrics.failures.Inc()
			p.cfg.Logger.Error("proxy sync failed; retrying", "err", err)
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.changes:
		case <-time.After(p.cfg.SyncPeriod):
		}
	}
}

// sync builds the ruleset from the caches and applies it.
func (p *proxy) sync(ctx context.Context) error {
	start := time.Now()
	p.mu.Lock()
	triggers := p.triggers
	p.triggers = nil
	p.mu.Unlock()
	// The revisions are read before the lists: the rules reflect at least
	// every change up to them.
	done := programmed{services: p.services.Revision(), slices: p.slices.Revision()}
	svcs, slices := p.services.List(), p.slices.List()
	chains := 0
	for _, f := range p.cfg.Families {
		rs := p.builders[f].Build(rules.Input{Family: f, Services: svcs, EndpointSlices: slices})
		for _, s := range rs.Skipped {
			p.cfg.Logger.Debug("proxy skipped", "reason", s)
		}
		if err := p.cfg.Applier.Apply(ctx, rs); err != nil {
			p.mu.Lock()
			p.triggers = append(triggers, p.triggers...)
			p.mu.Unlock()
			return err
		}
		chains += len(rs.Chains)
	}
	now := time.Now()
	p.metrics.duration.Observe(now.Sub(start).Seconds())
	p.metrics.lastSync.Set(float64(now.UnixNano()) / 1e9)
	for _, t := range triggers {
		p.metrics.programming.Observe(now.Sub(t).Seconds())
	}
	p.cfg.Logger.Debug("proxy synced", "chains", chains, "took", now.Sub(start))
	if p.recorder != nil {
		done.at = now
		p.recorder.offer(done)
	}
	return nil
}

func (p *proxy) changed(trigger time.Time) {
	if !trigger.IsZero() {
		p.mu.Lock()
		p.triggers = append(p.triggers, trigger)
		p.mu.Unlock()
	}
	select {
	case p.changes <- struct{}{}:
	default:
	}
}

// triggerTime is when the change an EndpointSlice reflects happened, as
// the EndpointSlice controller records it.
func triggerTime(s *discoveryv1.EndpointSlice) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s.Annotations[corev1.EndpointsLastChangeTriggerTime])
	if err != nil {
		return time.Time{}
	}
	return t
}

// Package kcm assembles the controller-manager: the bus-fed caches, the
// selected controllers and the Lease election, around one API client. Both
// `kubebus controller-manager` and the all-in-one `kubebus server` run it.
package kcm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
)

// Options configure the controller-manager.
type Options struct {
	REST    *rest.Config
	NATSURL string
	// NATS are the bus credentials (the component's client certificate).
	NATS bus.Credentials
	// Controllers selects controllers as upstream's --controllers does:
	// "*" is every default one, "name" adds one, "-name" removes one.
	Controllers []string
	Lease       controllers.LeaseConfig
	// Instance distinguishes replicas' durable consumers (default the
	// hostname, stable across restarts; set it when replicas share a host).
	Instance string
	Logger   *slog.Logger
	Tuning   Tuning
	// Caches, when set, are the process's shared informers (see
	// cache.New), which their owner runs; the controller-manager then
	// keeps no caches of its own for those resources.
	Caches *cache.Informers
}

// Tuning holds per-controller settings.
type Tuning struct {
	NodeMonitorGracePeriod time.Duration // 40s
	ClusterCIDR            string        // 10.244.0.0/16
	// ClusterSigningCertFile and ClusterSigningKeyFile are the cluster CA
	// (PEM) csrsigning issues certificates from; without them csrsigning
	// does not run. The controller-manager is the only component that
	// needs the CA's key.
	ClusterSigningCertFile, ClusterSigningKeyFile string
	// ClusterSigningDuration bounds the certificates csrsigning issues
	// (default 1 year).
	ClusterSigningDuration time.Duration
	// RootCAFile is the CA bundle root-ca-cert-publisher publishes in every
	// namespace (default: the CA the controller-manager's API client
	// trusts).
	RootCAFile string
	// LocalPathRoot is the directory on the nodes under which the
	// local-path provisioner makes volumes (default
	// /var/lib/kubebus/storage).
	LocalPathRoot string
	// CronJobClockSpeed, for tests only, runs the CronJob controller's
	// clock that many times faster than real time from its start (0 or 1:
	// real time).
	CronJobClockSpeed float64
}

// Deps is what a controller constructor gets.
type Deps struct {
	Client   kubernetes.Interface
	REST     *rest.Config
	Caches   *cache.Informers
	Recorder func(component string) record.EventRecorder
	Logger   *slog.Logger
	Tuning   Tuning
	// AddCache registers an extra informer the manager must run and wait for.
	AddCache func(controllers.Cache)
	// JetStream and Instance let controllers open bus consumers of their own.
	JetStream jetstream.JetStream
	Instance  string
}

// constructor builds one controller (or loop) from the shared deps.
type constructor func(ctx context.Context, d Deps) (controllers.Runnable, error)

// known lists every controller by name; defaults are those enabled by "*".
type entry struct {
	name     string
	build    constructor
	disabled bool // not in "*"
}

// Enabled resolves a --controllers selection against the known names.
func Enabled(selection []string, known []string, defaults []string) ([]string, error) {
	if len(selection) == 0 {
		selection = []string{"*"}
	}
	on := map[string]bool{}
	for _, s := range selection {
		s = strings.TrimSpace(s)
		switch {
		case s == "*":
			for _, n := range defaults {
				on[n] = true
			}
		case strings.HasPrefix(s, "-"):
			if !slices.Contains(known, s[1:]) {
				return nil, fmt.Errorf("unknown controller %q", s[1:])
			}
			delete(on, s[1:])
		default:
			if !slices.Contains(known, s) {
				return nil, fmt.Errorf("unknown controller %q", s)
			}
			on[s] = true
		}
	}
	var out []string
	for _, n := range known {
		if on[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// Run runs the controller-manager until ctx ends.
func Run(ctx context.Context, o Options) error {
	if o.REST == nil || o.NATSURL == "" {
		return errors.New("kcm: REST config and NATS URL are required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Instance == "" {
		o.Instance, _ = os.Hostname()
	}
	if o.Tuning.NodeMonitorGracePeriod == 0 {
		o.Tuning.NodeMonitorGracePeriod = 40 * time.Second
	}
	if o.Tuning.ClusterCIDR == "" {
		o.Tuning.ClusterCIDR = "10.244.0.0/16"
	}
	cfg := rest.CopyConfig(o.REST)
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.UserAgent = "kube-controller-manager"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the API client: %w", err)
	}
	nc, js, err := bus.Connect(o.NATSURL, "kube-controller-manager", o.NATS)
	if err != nil {
		return err
	}
	defer nc.Close()
	m := &controllers.Manager{Client: client, Lease: o.Lease, Logger: o.Logger}
	if m.Lease.Name == "" {
		m.Lease.Name = "kube-controller-manager"
	}
	caches := o.Caches
	if caches == nil {
		if caches, err = cache.New(cache.Config{JetStream: js, Component: "kube-controller-manager", Instance: o.Instance, Logger: o.Logger}); err != nil {
			return err
		}
		m.AddCache(caches)
	} else {
		m.AddCache(controllers.Borrowed{Synced: caches})
	}
	var stops []func()
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	deps := Deps{Client: client, REST: cfg, Caches: caches, Logger: o.Logger, Tuning: o.Tuning, AddCache: m.AddCache, JetStream: js, Instance: o.Instance,
		Recorder: func(component string) record.EventRecorder {
			r, stop := controllers.Recorder(ctx, client, component)
			stops = append(stops, stop)
			return r
		}}
	table := registry()
	var known, defaults []string
	for _, e := range table {
		known = append(known, e.name)
		if !e.disabled {
			defaults = append(defaults, e.name)
		}
	}
	names, err := Enabled(o.Controllers, known, defaults)
	if err != nil {
		return err
	}
	for _, e := range table {
		if !slices.Contains(names, e.name) {
			continue
		}
		r, err := e.build(ctx, deps)
		if err != nil {
			return fmt.Errorf("starting the %s controller: %w", e.name, err)
		}
		m.Add(r)
	}
	o.Logger.Info("controller-manager starting", "controllers", names, "instance", o.Instance)
	return m.Run(ctx)
}

// Package shell is the scheduler's I/O loop around the pure core: bus-fed
// informers (nodes, pods, namespaces, and the claims, volumes and storage
// classes of volume binding) keep one framework.Snapshot and the queue of
// pending pods; while it holds the Lease kube-system/kube-scheduler it pops
// pods, runs cycle.Schedule, assumes and reserves, and in a binding
// goroutine runs the PreBind plugins (VolumeBinding waits there, bounded,
// for the pod's claims to be provisioned and bound) and binds through
// pods/<name>/binding, records events, and carries out preemption. Both
// `kubebus scheduler` and `kubebus server` run it.
package shell

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/scheduler/config"
	"github.com/kubebus/kubebus/scheduler/framework"
	"github.com/kubebus/kubebus/scheduler/queue"
)

// Component is the scheduler's name in events, durables and its user agent.
const (
	Component      = "kube-scheduler"
	EventComponent = "default-scheduler"
)

// Options configure the scheduler.
type Options struct {
	REST    *rest.Config
	NATSURL string
	// NATS are the bus credentials (the component's client certificate).
	NATS bus.Credentials
	// Config is the KubeSchedulerConfiguration (default config.Default()).
	Config *config.Configuration
	// Lease overrides the configuration's leader election where set.
	Lease controllers.LeaseConfig
	// Instance distinguishes replicas' durable consumers (default the
	// hostname).
	Instance string
	Logger   *slog.Logger
	// Caches, when set, are informers the process shares and runs (in
	// `kubebus server`, the controller-manager's); the scheduler then
	// follows the bus with none of its own.
	Caches *Caches
}

// Caches are the informers the scheduler reads.
type Caches struct {
	Nodes      *informer.Informer[*corev1.Node]
	Pods       *informer.Informer[*corev1.Pod]
	Namespaces *informer.Informer[*corev1.Namespace]
	// The claims, volumes and classes VolumeBinding reads.
	PersistentVolumeClaims *informer.Informer[*corev1.PersistentVolumeClaim]
	PersistentVolumes      *informer.Informer[*corev1.PersistentVolume]
	StorageClasses         *informer.Informer[*storagev1.StorageClass]
}

func (o *Options) validate() error {
	if o.REST == nil || o.NATSURL == "" {
		return errors.New("scheduler: REST config and NATS URL are required")
	}
	if o.Config == nil {
		o.Config = config.Default()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Instance == "" {
		o.Instance, _ = os.Hostname()
	}
	le := o.Config.LeaderElection
	l := &o.Lease
	if l.Namespace == "" {
		l.Namespace = le.ResourceNamespace
	}
	if l.Name == "" {
		l.Name = le.ResourceName
	}
	if l.LeaseDuration == 0 {
		l.LeaseDuration = le.LeaseDuration.Duration
	}
	if l.RenewDeadline == 0 {
		l.RenewDeadline = le.RenewDeadline.Duration
	}
	if l.RetryPeriod == 0 {
		l.RetryPeriod = le.RetryPeriod.Duration
	}
	if le.LeaderElect != nil && !*le.LeaderElect {
		l.Disabled = true
	}
	return nil
}

// Run runs the scheduler until ctx ends.
func Run(ctx context.Context, o Options) error {
	if err := o.validate(); err != nil {
		return err
	}
	profiles, err := o.Config.BuildProfiles()
	if err != nil {
		return fmt.Errorf("scheduler: building profiles: %w", err)
	}
	cfg := rest.CopyConfig(o.REST)
	cc := o.Config.ClientConnection
	cfg.QPS, cfg.Burst = cc.QPS, int(cc.Burst)
	// As upstream: protobuf unless the configuration says otherwise.
	cfg.ContentType, cfg.AcceptContentTypes = cc.ContentType, cc.AcceptContentTypes
	cfg.UserAgent = Component
	// As upstream, bindings, events and the lease each get their own client
	// and so their own rate limiter: a backlog of bindings must not starve
	// the lease renewal (the leader would lose its lease mid-work) or delay
	// the events.
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the API client: %w", err)
	}
	eventClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the events client: %w", err)
	}
	leaseCfg := rest.CopyConfig(cfg)
	leaseCfg.UserAgent = Component + "/leader-election"
	leaseClient, err := kubernetes.NewForConfig(leaseCfg)
	if err != nil {
		return fmt.Errorf("creating the leader election client: %w", err)
	}
	nc, js, err := bus.Connect(o.NATSURL, Component+"-"+o.Instance, o.NATS)
	if err != nil {
		return err
	}
	defer nc.Close()

	s := &Scheduler{
		client:   client,
		profiles: profiles,
		snap:     framework.NewSnapshot(nil, nil, nil),
		queue: queue.New(queue.Config{
			InitialBackoff: time.Duration(*o.Config.PodInitialBackoffSeconds) * time.Second,
			MaxBackoff:     time.Duration(*o.Config.PodMaxBackoffSeconds) * time.Second,
		}),
		parallelism: int(*o.Config.Parallelism),
		log:         o.Logger,
	}
	m := &controllers.Manager{Client: leaseClient, Lease: o.Lease, Logger: o.Logger}
	if c := o.Caches; c != nil {
		s.nodes, s.pods, s.namespaces = c.Nodes, c.Pods, c.Namespaces
		s.claims, s.volumes, s.classes = c.PersistentVolumeClaims, c.PersistentVolumes, c.StorageClasses
		for _, c := range []controllers.Cache{s.nodes, s.pods, s.namespaces, s.claims, s.volumes, s.classes} {
			m.AddCache(controllers.Borrowed{Synced: c})
		}
	} else {
		if s.nodes, err = newInformer(js, o, "nodes", func() *corev1.Node { return &corev1.Node{} }); err != nil {
			return err
		}
		if s.pods, err = newInformer(js, o, "pods", func() *corev1.Pod { return &corev1.Pod{} }); err != nil {
			return err
		}
		if s.namespaces, err = newInformer(js, o, "namespaces", func() *corev1.Namespace { return &corev1.Namespace{} }); err != nil {
			return err
		}
		if s.claims, err = newInformer(js, o, "persistentvolumeclaims", func() *corev1.PersistentVolumeClaim { return &corev1.PersistentVolumeClaim{} }); err != nil {
			return err
		}
		if s.volumes, err = newInformer(js, o, "persistentvolumes", func() *corev1.PersistentVolume { return &corev1.PersistentVolume{} }); err != nil {
			return err
		}
		if s.classes, err = newGroupInformer(js, o, storagev1.GroupName, "storageclasses", func() *storagev1.StorageClass { return &storagev1.StorageClass{} }); err != nil {
			return err
		}
		m.AddCache(s.nodes)
		m.AddCache(s.pods)
		m.AddCache(s.namespaces)
		m.AddCache(s.claims)
		m.AddCache(s.volumes)
		m.AddCache(s.classes)
	}
	s.getPod = s.pods.Get
	s.addHandlers()

	rec, stop := controllers.Recorder(ctx, eventClient, EventComponent)
	defer stop()
	s.recorder = rec
	m.Add(s)
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	o.Logger.Info("scheduler starting", "profiles", names, "instance", o.Instance, "leaderElect", !o.Lease.Disabled)
	return m.Run(ctx)
}

func newInformer[T runtime.Object](js jetstream.JetStream, o Options, resource string, newObj func() T) (*informer.Informer[T], error) {
	return newGroupInformer(js, o, "", resource, newObj)
}

func newGroupInformer[T runtime.Object](js jetstream.JetStream, o Options, group, resource string, newObj func() T) (*informer.Informer[T], error) {
	i, err := informer.New(informer.Config[T]{
		JetStream: js, Component: Component, Instance: o.Instance,
		Group: group, Resource: resource, New: newObj, Logger: o.Logger, Narrow: true,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the %s informer: %w", resource, err)
	}
	return i, nil
}

// Scheduler is the running scheduler: the cache, the queue and the loop.
type Scheduler struct {
	client      kubernetes.Interface
	recorder    record.EventRecorder
	profiles    map[string]*framework.Profile
	queue       *queue.Queue
	parallelism int
	log         *slog.Logger

	nodes      *informer.Informer[*corev1.Node]
	pods       *informer.Informer[*corev1.Pod]
	namespaces *informer.Informer[*corev1.Namespace]
	claims     *informer.Informer[*corev1.PersistentVolumeClaim]
	volumes    *informer.Informer[*corev1.PersistentVolume]
	classes    *informer.Informer[*storagev1.StorageClass]
	// getPod reads the pods cache (s.pods.Get; tests give a map).
	getPod func(namespace, name string) (*corev1.Pod, bool)

	mu    sync.Mutex // guards snap and next
	snap  *framework.Snapshot
	next  int // the next cycle's StartIndex
	binds sync.WaitGroup
	// bindSlots holds a token per binding in flight (maxBindsInFlight).
	bindSlots chan struct{}
}

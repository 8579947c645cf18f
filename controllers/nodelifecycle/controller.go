package nodelifecycle

import (
	"context"
	"log/slog"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

// Name is the controller's name; its eviction queue is Name+"-eviction".
const Name = "nodelifecycle"

// The parts of the caches the controller reads.
type (
	nodeLister interface {
		Get(namespace, name string) (*corev1.Node, bool)
		List() []*corev1.Node
	}
	leaseGetter interface {
		Get(namespace, name string) (*coordinationv1.Lease, bool)
	}
	podIndexer interface {
		ByIndex(index, value string) []*corev1.Pod
	}
)

// Controller is the node lifecycle controller: a Runnable with two queues
// keyed by node name, one for health and taints, one for evictions.
type Controller struct {
	cfg    Config
	client kubernetes.Interface
	clock  Clock
	log    *slog.Logger
	nodes  nodeLister
	leases leaseGetter
	pods   podIndexer
	health *controllers.Controller
	evict  *controllers.Controller

	mu        sync.Mutex
	beats     map[string]heartbeat
	zones     zoneSnapshot
	buckets   map[string]*bucket
	taintSeen map[string]time.Time // NoExecute taints without timeAdded: when first seen
}

var _ controllers.Runnable = (*Controller)(nil)

// New builds the controller and registers its handlers on the informers:
// call it before they run (heartbeats are timed as the informers deliver
// them, on standbys too). Run it while leading.
func New(cfg Config) (*Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := newController(cfg, cfg.Nodes, cfg.Leases, cfg.Pods)
	cfg.Leases.AddHandler(informer.HandlerFuncs[*coordinationv1.Lease]{
		AddFunc:    c.onLease,
		UpdateFunc: func(_, l *coordinationv1.Lease) { c.onLease(l) },
		DeleteFunc: func(l *coordinationv1.Lease) { c.health.Enqueue(controllers.Request{Name: l.Name}) },
	})
	cfg.Nodes.AddHandler(informer.HandlerFuncs[*corev1.Node]{
		AddFunc:    c.onNode,
		UpdateFunc: func(_, n *corev1.Node) { c.onNode(n) },
		DeleteFunc: c.onNodeDelete,
	})
	cfg.Pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{
		AddFunc:    c.onPod,
		UpdateFunc: func(_, p *corev1.Pod) { c.onPod(p) },
	})
	return c, nil
}

func newController(cfg Config, nodes nodeLister, leases leaseGetter, pods podIndexer) *Controller {
	c := &Controller{
		cfg: cfg, client: cfg.Client, clock: cfg.Clock, log: cfg.Options.Logger.With("controller", Name),
		nodes: nodes, leases: leases, pods: pods,
		beats: map[string]heartbeat{}, buckets: map[string]*bucket{}, taintSeen: map[string]time.Time{},
	}
	c.health = controllers.New(Name, controllers.ReconcileFunc(c.reconcileNode), cfg.Options)
	c.evict = controllers.New(Name+"-eviction", controllers.ReconcileFunc(c.reconcileEvictions), cfg.Options)
	return c
}

// Run works both queues until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, q := range []*controllers.Controller{c.health, c.evict} {
		wg.Add(1)
		go func() { defer wg.Done(); q.Run(ctx) }()
	}
	wg.Wait()
}

func (c *Controller) onLease(l *coordinationv1.Lease) {
	if l.Namespace != corev1.NamespaceNodeLease {
		return
	}
	if _, ok := c.nodes.Get("", l.Name); !ok {
		return // a lease without a node; the node's arrival starts its clock
	}
	c.see(l.Name, nil, l)
	c.health.Enqueue(controllers.Request{Name: l.Name})
}

func (c *Controller) onNode(n *corev1.Node) {
	c.see(n.Name, n, nil)
	c.health.Enqueue(controllers.Request{Name: n.Name})
	if len(noExecuteTaints(n)) > 0 {
		c.evict.Enqueue(controllers.Request{Name: n.Name})
	}
}

func (c *Controller) onNodeDelete(n *corev1.Node) {
	c.mu.Lock()
	delete(c.beats, n.Name)
	c.mu.Unlock()
	c.evict.Enqueue(controllers.Request{Name: n.Name}) // forgets its taints
}

// onPod wakes the node's queues for a pod that may have to go or be marked
// not ready.
func (c *Controller) onPod(p *corev1.Pod) {
	if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
		return
	}
	n, ok := c.nodes.Get("", p.Spec.NodeName)
	if !ok {
		return
	}
	if len(noExecuteTaints(n)) > 0 {
		c.evict.Enqueue(controllers.Request{Name: n.Name})
	}
	if readyStatus(n) == corev1.ConditionUnknown && podReady(p) {
		c.health.Enqueue(controllers.Request{Name: n.Name})
	}
}

// see records a heartbeat seen now and returns the node's record.
func (c *Controller) see(name string, node *corev1.Node, lease *coordinationv1.Lease) heartbeat {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	var prev *heartbeat
	if h, ok := c.beats[name]; ok {
		prev = &h
	}
	h := observe(prev, node, lease, now)
	c.beats[name] = h
	return h
}

// zoneSnapshot returns the zone states, recomputed once per MonitorPeriod.
func (c *Controller) zoneSnapshot(now time.Time) zoneSnapshot {
	c.mu.Lock()
	cur := c.zones
	c.mu.Unlock()
	if !cur.at.IsZero() && now.Sub(cur.at) < c.cfg.MonitorPeriod {
		return cur
	}
	next := computeZones(c.nodes.List(), c.cfg.UnhealthyZoneThreshold, now)
	c.mu.Lock()
	defer c.mu.Unlock()
	prev := c.zones
	c.zones = next
	// The first zones seen (a fresh start, the first node registering) are
	// no news; a zone changing state later is.
	lvl := slog.LevelInfo
	if len(prev.zones) == 0 {
		lvl = slog.LevelDebug
	}
	for z, info := range next.zones {
		if old, ok := prev.zones[z]; !ok || old.state != info.state {
			c.log.Log(context.Background(), lvl, "zone state", "zone", z, "state", info.state.String(), "nodes", info.size)
		}
		if b := c.buckets[z]; b != nil {
			b.setRate(zoneRate(info, &c.cfg), now)
		}
	}
	switch {
	case next.allDisrupted && !prev.allDisrupted:
		if lvl == slog.LevelInfo {
			lvl = slog.LevelWarn
		}
		c.log.Log(context.Background(), lvl, "no node is ready in any zone: holding NoExecute taints back")
	case prev.allDisrupted && !next.allDisrupted:
		// As upstream: every node gets a fresh grace period.
		c.log.Debug("some nodes are ready again: leaving full disruption")
		for name, h := range c.beats {
			h.probe = now
			c.beats[name] = h
		}
	}
	return next
}

// takeToken asks the zone's limiter for one NoExecute addition.
func (c *Controller) takeToken(zone string, snap zoneSnapshot, now time.Time) (bool, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.buckets[zone]
	if b == nil {
		b = newBucket(zoneRate(snap.zones[zone], &c.cfg), now)
		c.buckets[zone] = b
	}
	return b.take(now)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

package nodelifecycle

import (
	"errors"
	"log/slog"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

// Defaults, as upstream's kube-controller-manager flags.
const (
	DefaultGracePeriod            = 40 * time.Second // --node-monitor-grace-period
	DefaultStartupGracePeriod     = 60 * time.Second // --node-startup-grace-period
	DefaultMonitorPeriod          = 5 * time.Second  // --node-monitor-period
	DefaultEvictionRate           = 0.1              // --node-eviction-rate (nodes/s per zone)
	DefaultSecondaryEvictionRate  = 0.01             // --secondary-node-eviction-rate
	DefaultLargeClusterSize       = 50               // --large-cluster-size-threshold
	DefaultUnhealthyZoneThreshold = 0.55             // --unhealthy-zone-threshold
)

// Clock tells the time; tests pass a fake.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Config configures the controller. Zero values take the defaults; a
// negative rate means zero.
type Config struct {
	Client kubernetes.Interface
	Nodes  *informer.Informer[*corev1.Node]
	// Leases holds kube-node-lease's Leases (cache.Informers.NodeLeases).
	Leases *informer.Informer[*coordinationv1.Lease]
	// Pods must have the cache.ByNodeName index.
	Pods *informer.Informer[*corev1.Pod]

	// GracePeriod is how long a node may stay silent before it is marked
	// Unknown; StartupGracePeriod applies instead while it has never posted
	// a Ready condition.
	GracePeriod, StartupGracePeriod time.Duration
	// MonitorPeriod is how often zone states are recomputed, and how soon a
	// node whose NoExecute taint was held back is looked at again.
	MonitorPeriod time.Duration
	// EvictionRate is how many nodes per second and zone get a NoExecute
	// taint added (which starts their pods' eviction); a partially disrupted
	// zone uses SecondaryEvictionRate if it has more than LargeClusterSize
	// nodes and stops otherwise. A zone is partially disrupted when more
	// than two of its nodes, and at least UnhealthyZoneThreshold of them,
	// are not ready.
	EvictionRate, SecondaryEvictionRate float64
	LargeClusterSize                    int
	UnhealthyZoneThreshold              float64

	// Recorder, when set, receives NodeNotReady and TaintManagerEviction
	// events.
	Recorder record.EventRecorder
	Clock    Clock
	// Options tune both work queues (nodes and evictions).
	Options controllers.Options
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("nodelifecycle: Client is required")
	case c.Nodes == nil || c.Leases == nil || c.Pods == nil:
		return errors.New("nodelifecycle: the Nodes, Leases and Pods informers are required")
	case c.GracePeriod < 0 || c.StartupGracePeriod < 0 || c.MonitorPeriod < 0:
		return errors.New("nodelifecycle: periods must not be negative")
	case c.UnhealthyZoneThreshold < 0 || c.UnhealthyZoneThreshold > 1:
		return errors.New("nodelifecycle: UnhealthyZoneThreshold must be within 0..1")
	}
	c.defaults()
	return nil
}

func (c *Config) defaults() {
	c.GracePeriod = or(c.GracePeriod, DefaultGracePeriod)
	c.StartupGracePeriod = or(c.StartupGracePeriod, DefaultStartupGracePeriod)
	c.MonitorPeriod = or(c.MonitorPeriod, DefaultMonitorPeriod)
	c.EvictionRate = rate(c.EvictionRate, DefaultEvictionRate)
	c.SecondaryEvictionRate = rate(c.SecondaryEvictionRate, DefaultSecondaryEvictionRate)
	c.LargeClusterSize = or(c.LargeClusterSize, DefaultLargeClusterSize)
	c.UnhealthyZoneThreshold = or(c.UnhealthyZoneThreshold, DefaultUnhealthyZoneThreshold)
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	if c.Options.Logger == nil {
		c.Options.Logger = slog.Default()
	}
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func rate(v, def float64) float64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

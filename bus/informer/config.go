package informer

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebus/kubebus/bus"
)

// IndexFunc returns the values under which an object is indexed (none is
// fine). It must be a pure function of the object.
type IndexFunc[T runtime.Object] func(obj T) []string

// DefaultCheckInterval is how often a running informer asks the stream
// whether messages it has not read were evicted and whether a gap was
// announced.
const DefaultCheckInterval = 10 * time.Second

// Config configures an Informer.
type Config[T runtime.Object] struct {
	// JetStream is the bus connection. Its NATS connection should reconnect
	// forever (bus.Connect does); the informer reopens its consumer after an
	// outage.
	JetStream jetstream.JetStream
	// Component names the durable consumer, with the resource and the
	// optional namespace and instance (see durableName): e.g.
	// "kube-controller-manager_leases-coordination-k8s-io_ns-kube-node-lease_vm-1".
	// It should be made of letters, digits and '-'.
	Component string
	// Group ("" for core) and Resource (plural) select the objects.
	Group, Resource string
	// Namespace optionally narrows the cache to one namespace. The live
	// consumer still reads the whole resource (its order check is per
	// resource) and drops the other namespaces.
	Namespace string
	// Node, when set, selects this node's pods only (Group "" and Resource
	// "pods"), from KUBE_STATE's kstatenode.<node>.> and KUBE_NODEPODS's
	// knode.<node>.>.
	Node string
	// Narrow makes the informer read only through bus calls whose
	// subjects name its resource, as a bus identity narrowed to some
	// resources must (bus/busauth: kube-proxy, the cluster DNS, the
	// scheduler): the live consumer is filtered to the resource alone,
	// so it learns of the publisher's gaps from the periodic check, as a
	// node informer does, and at start the live consumer opens at the
	// stream's last message rather than reading that message by its
	// sequence (followFrom). A node informer is always narrow.
	Narrow bool
	// Instance is appended to the durable name. Set it when several
	// processes of one component run with the same selection at once (HA
	// replicas): two informers sharing a durable would steal each other's
	// messages, and Run fails with ErrDurableConflict when it notices.
	Instance string
	// New returns an empty object, e.g. func() *corev1.Pod { return &corev1.Pod{} }.
	// The objects must implement metav1.Object.
	New func() T
	// Indexers are extra indexes by name (namespace and label lookups are
	// built in).
	Indexers map[string]IndexFunc[T]
	// CheckInterval is how often the stream is checked for evicted messages
	// and announced gaps (default DefaultCheckInterval).
	CheckInterval time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics, when set, receives the informer's counters, labelled with the
	// component, resource and node.
	Metrics prometheus.Registerer
}

func (c *Config[T]) validate() error {
	switch {
	case c.JetStream == nil:
		return errors.New("informer: JetStream is required")
	case c.Component == "":
		return errors.New("informer: Component is required")
	case c.Resource == "":
		return errors.New("informer: Resource is required")
	case c.New == nil:
		return errors.New("informer: New is required")
	case c.Node != "" && (c.Group != "" || c.Resource != "pods"):
		return fmt.Errorf("informer: Node is only for core pods, not %s", groupResource(c.Group, c.Resource))
	}
	if _, ok := any(c.New()).(metav1.Object); !ok {
		return fmt.Errorf("informer: %T does not implement metav1.Object", c.New())
	}
	for name, f := range c.Indexers {
		if name == "" || f == nil {
			return errors.New("informer: an indexer needs a name and a function")
		}
	}
	if c.CheckInterval <= 0 {
		c.CheckInterval = DefaultCheckInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// durableName is the durable consumer's name: bus.DurableName of the
// informer's selection.
//
// A node informer (Node set) keeps the name bus/busauth.NodeConsumer
// expects, the one older kubebus gave every informer
// (legacyDurableName): the node's bus permissions allow that one
// consumer only.
func (c *Config[T]) durableName() string {
	if c.Node != "" {
		return c.legacyDurableName()
	}
	return bus.DurableName(c.Component, c.Group, c.Resource, c.Namespace, c.Instance)
}

// legacyDurableName is the name older kubebus gave the durable consumer:
// "<component>-<group or core>-<resource>[-<namespace>][-<node>][-<instance>]",
// each token escaped with bus.Escape.
func (c *Config[T]) legacyDurableName() string {
	parts := []string{c.Component, groupToken(c.Group), c.Resource}
	for _, p := range []string{c.Namespace, c.Node, c.Instance} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	for i, p := range parts {
		parts[i] = bus.Escape(p)
	}
	return strings.Join(parts, "-")
}

// narrow reports whether the informer reads only what names its own
// selection (Narrow, or a node informer).
func (c *Config[T]) narrow() bool { return c.Narrow || c.Node != "" }

// liveStream is the stream the durable consumer reads.
func (c *Config[T]) liveStream() string {
	if c.Node != "" {
		return bus.NodePodsStream
	}
	return bus.HistoryStream
}

// liveFilter is the chain the live consumer follows (without the gap
// subject): a whole resource, or one node's pods.
func (c *Config[T]) liveFilter() string {
	if c.Node != "" {
		return bus.NodeFilter(c.Node)
	}
	return bus.ResourceFilter(c.Group, c.Resource, "")
}

// gapSubject is where the live stream carries the publisher's GAP events:
// KUBE_NODEPODS has its own, so that a GAP on that stream alone (it is
// kept in memory and can be lost on its own) reaches the kubelets.
func (c *Config[T]) gapSubject() string {
	if c.Node != "" {
		return bus.NodeGapSubject
	}
	return bus.GapSubject
}

// liveFilters are the live consumer's filter subjects.
func (c *Config[T]) liveFilters() []string {
	if c.narrow() {
		return []string{c.liveFilter()}
	}
	return []string{c.liveFilter(), bus.GapSubject}
}

// stateFilter selects the objects' latest events on KUBE_STATE.
func (c *Config[T]) stateFilter() string {
	if c.Node != "" {
		return bus.StateNodeFilter(c.Node)
	}
	return bus.StateFilter(c.Group, c.Resource, c.Namespace)
}

func groupToken(g string) string {
	if g == "" {
		return "core"
	}
	return g
}

func groupResource(group, resource string) string { return groupToken(group) + "/" + resource }

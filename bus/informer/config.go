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
	// Component names the durable consumer, with the group, resource and the
	// optional namespace, node and instance:
	// "<component>-<group>-<resource>[-<namespace>][-<node>][-<instance>]".
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

// durableName is the durable consumer's name: the tokens joined by '-', each
// escaped so that it is a valid consumer name.
func (c *Config[T]) durableName() string {
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

// liveFilters are the live consumer's filter subjects.
func (c *Config[T]) liveFilters() []string {
	if c.Node != "" {
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

package informer

import (
	"crypto/sha256"
	"encoding/hex"
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

// maxDurableLen is NATS's limit on the length of a consumer name.
const maxDurableLen = 255

// durableName is the durable consumer's name. It says whose consumer it is
// and what it reads:
//
//	<component>_<resource>[-<group>][_ns-<namespace>][_<instance>]
//
// with the group's dots written as dashes, e.g. "kube-scheduler_pods_vm-1",
// "kube-controller-manager_leases-coordination-k8s-io_ns-kube-node-lease".
// NATS names may not hold '.', '*', '>', whitespace or path separators, so
// every character other than a letter, a digit or '-' is written as '-'.
// Where that loses something (a group or a resource with a dash, a dot in
// a namespace or an instance, an instance that starts with "ns-", a name
// over maxDurableLen), the name would no longer read back as this
// informer's selection: it then ends in '~' and ten hex digits of a hash
// of the exact fields, so two informers never share a name ('~' appears in
// no name without the hash).
//
// A node informer (Node set) keeps the name bus/busauth.NodeConsumer
// expects, the one older kubebus gave every informer
// (legacyDurableName): the node's bus permissions allow that one
// consumer only.
func (c *Config[T]) durableName() string {
	if c.Node != "" {
		return c.legacyDurableName()
	}
	f := durableFields{Component: c.Component, Group: c.Group, Resource: c.Resource, Namespace: c.Namespace, Instance: c.Instance}
	name := f.readable()
	if back, ok := parseDurable(name); ok && back == f && len(name) <= maxDurableLen {
		return name
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{f.Component, f.Group, f.Resource, f.Namespace, f.Instance}, "\x00")))
	suffix := "~" + hex.EncodeToString(sum[:])[:10]
	return name[:min(len(name), maxDurableLen-len(suffix))] + suffix
}

// durableFields are what a durable name says.
type durableFields struct {
	Component, Group, Resource, Namespace, Instance string
}

// readable writes the fields as a name, possibly losing something.
func (f durableFields) readable() string {
	rg := nameToken(f.Resource)
	if f.Group != "" {
		rg += "-" + nameToken(f.Group)
	}
	parts := []string{nameToken(f.Component), rg}
	if f.Namespace != "" {
		parts = append(parts, "ns-"+nameToken(f.Namespace))
	}
	if f.Instance != "" {
		parts = append(parts, nameToken(f.Instance))
	}
	return strings.Join(parts, "_")
}

// parseDurable reads a name without a hash back into its fields.
func parseDurable(name string) (durableFields, bool) {
	parts := strings.Split(name, "_")
	if len(parts) < 2 || len(parts) > 4 {
		return durableFields{}, false
	}
	f := durableFields{Component: parts[0]}
	var group string
	f.Resource, group, _ = strings.Cut(parts[1], "-")
	f.Group = strings.ReplaceAll(group, "-", ".")
	rest := parts[2:]
	if len(rest) > 0 && strings.HasPrefix(rest[0], "ns-") {
		f.Namespace, rest = strings.TrimPrefix(rest[0], "ns-"), rest[1:]
	}
	switch len(rest) {
	case 0:
	case 1:
		f.Instance = rest[0]
	default:
		return durableFields{}, false
	}
	return f, true
}

// nameToken writes every character of s that is not a letter, a digit or
// '-' as '-'.
func nameToken(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, s)
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

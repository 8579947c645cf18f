package garbagecollector

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/record"
)

// DefaultComponent names the collector's durable bus consumers. It differs
// from the controller-manager's typed caches so the two never share a
// durable.
const DefaultComponent = "kube-controller-manager-gc"

// Resource is one kind of object the collector watches and may delete.
type Resource struct {
	Group, Version string // "" and "v1" for core
	Resource       string // plural: "configmaps"
	Kind           string // "ConfigMap"
	Namespaced     bool
}

// GVR returns the resource's group, version and plural name.
func (r Resource) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
}

// GroupKind returns the resource's group and kind, which is how
// ownerReferences name it (their version may differ).
func (r Resource) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: r.Group, Kind: r.Kind}
}

func (r Resource) validate() error {
	if r.Version == "" || r.Resource == "" || r.Kind == "" {
		return fmt.Errorf("garbagecollector: resource %+v needs a version, a plural and a kind", r)
	}
	return nil
}

func (r Resource) String() string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

// Config configures a GC.
type Config struct {
	// JetStream is the bus the metadata informers read.
	JetStream jetstream.JetStream
	// Component prefixes the informers' durable names (default
	// DefaultComponent); Instance tells replicas apart.
	Component, Instance string
	// Shared are caches of some of Resources the process already keeps
	// (and runs), by group-resource: the collector reads them instead of
	// following the bus for those resources itself.
	Shared map[schema.GroupResource]Objects
	// Resources are every resource the server serves (namespaced and
	// cluster-scoped) that the collector watches. An ownerReference to a
	// kind not listed here is never judged absent.
	Resources []Resource
	// Client makes the live lookups and every write (DELETE, PATCH).
	Client metadata.Interface
	// Recorder, when set, records Warning events for failed writes.
	Recorder record.EventRecorder
	// Workers reconcile in parallel (default 8).
	Workers int
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics, when set, receives the informers' metrics.
	Metrics prometheus.Registerer
}

func (c *Config) validate() error {
	switch {
	case c.JetStream == nil:
		return errors.New("garbagecollector: JetStream is required")
	case c.Client == nil:
		return errors.New("garbagecollector: Client is required")
	case len(c.Resources) == 0:
		return errors.New("garbagecollector: Resources is empty")
	}
	seen := map[schema.GroupKind]bool{}
	for _, r := range c.Resources {
		if err := r.validate(); err != nil {
			return err
		}
		if seen[r.GroupKind()] {
			return fmt.Errorf("garbagecollector: kind %s is listed twice", r.GroupKind())
		}
		seen[r.GroupKind()] = true
	}
	if c.Component == "" {
		c.Component = DefaultComponent
	}
	if c.Workers <= 0 {
		c.Workers = 8
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

package resourcequota

import (
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver/quota"
	"github.com/kubebus/kubebus/bus/informer"
)

// Resources the server starts serving while the controller runs (those of
// CustomResourceDefinitions) are added with AddResource and removed with
// RemoveResource, as upstream's quota monitor follows discovery: their
// objects are counted (count/<resource>.<group>) from the cache given,
// their deletes replenish, and the quotas that limit them are recounted
// when they are added.
//
// A quota name nothing counts — a resource never added or removed since
// (a CRD not yet Established, deleted, or a typo), or one whose cache has
// not synced yet — keeps its last used value, and is left out of used
// while it has none. This is upstream's behaviour: its CalculateUsage
// only computes the names some evaluator of its registry matches, and the
// quota's other names keep what status.used had.

// RuntimeSource is the cache of a resource added at runtime. Unlike the
// caches of Config, which the controller-manager syncs before controllers
// start, it may still be loading when added: until HasSynced, the
// controller does not count from it.
type RuntimeSource interface {
	Source[*metav1.PartialObjectMetadata]
	HasSynced() bool
}

// SyncRetry is how soon a quota is recounted when a cache it counts from
// has not synced yet.
const SyncRetry = time.Second

// runtimeSource is one resource added at runtime; a handler acts only
// while its entry is the resource's current one.
type runtimeSource struct {
	gr  schema.GroupResource
	src RuntimeSource
}

// runtimeSources are the resources added at runtime, shared by the
// controller (which adds and removes) and its reconciler (which counts).
type runtimeSources struct {
	mu   sync.RWMutex
	byGR map[schema.GroupResource]*runtimeSource
}

func newRuntimeSources() *runtimeSources {
	return &runtimeSources{byGR: map[schema.GroupResource]*runtimeSource{}}
}

// current reports whether e is its resource's current entry.
func (s *runtimeSources) current(e *runtimeSource) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byGR[e.gr] == e
}

// snapshot returns the current entries, in no particular order.
func (s *runtimeSources) snapshot() []*runtimeSource {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*runtimeSource, 0, len(s.byGR))
	for _, e := range s.byGR {
		out = append(out, e)
	}
	return out
}

// AddResource counts a namespaced resource the server began serving at
// runtime from src, its metadata cache: its deletes replenish, and every
// quota that limits it is recounted (once src has synced). Adding a
// resource again replaces its cache; a resource counted typed (Typed) or
// from Config.Objects cannot be added.
func (c *Controller) AddResource(gr schema.GroupResource, src RuntimeSource) error {
	switch {
	case gr.Resource == "" || src == nil:
		return fmt.Errorf("resourcequota: resource %q needs a plural and a cache", gr)
	case Typed(gr):
		return fmt.Errorf("resourcequota: %s is counted from its typed cache", gr)
	case c.static[gr]:
		return fmt.Errorf("resourcequota: %s is one of the resources the controller was built with", gr)
	}
	e := &runtimeSource{gr: gr, src: src}
	c.rt.mu.Lock()
	_, replaced := c.rt.byGR[gr]
	c.rt.byGR[gr] = e
	c.rt.mu.Unlock()
	// Handlers cannot be removed: a removed or replaced entry's handler
	// stays, and does nothing.
	src.AddHandler(informer.HandlerFuncs[*metav1.PartialObjectMetadata]{
		DeleteFunc: func(m *metav1.PartialObjectMetadata) {
			if c.rt.current(e) {
				c.replenish(gr, m.Namespace)
			}
		},
	})
	if !replaced {
		c.log.Info("counting a resource served at runtime", "resource", gr.String())
	}
	c.recount(gr)
	return nil
}

// RemoveResource stops counting a resource AddResource added, once the
// server no longer serves it: the quotas that limit it keep the last
// value counted (as upstream). It does nothing for any other resource.
func (c *Controller) RemoveResource(gr schema.GroupResource) {
	c.rt.mu.Lock()
	_, ok := c.rt.byGR[gr]
	delete(c.rt.byGR, gr)
	c.rt.mu.Unlock()
	if ok {
		c.log.Info("no longer counting a resource not served", "resource", gr.String())
	}
}

// recount enqueues every quota whose spec limits something gr is charged
// for.
func (c *Controller) recount(gr schema.GroupResource) {
	for _, q := range c.quotas.List() {
		if len(quota.MatchingResources(gr, quota.Names(q.Spec.Hard))) > 0 {
			c.ctrl.EnqueueObject(q)
		}
	}
}

// staticSet is the set of Config.Objects' resources.
func staticSet(objects map[schema.GroupResource]Source[*metav1.PartialObjectMetadata]) map[schema.GroupResource]bool {
	out := make(map[schema.GroupResource]bool, len(objects))
	for gr := range objects {
		out[gr] = true
	}
	return out
}

// sortedGRs are grs in a stable order, for logs.
func sortedGRs(grs []schema.GroupResource) []string {
	out := make([]string, len(grs))
	for i, gr := range grs {
		out[i] = gr.String()
	}
	slices.Sort(out)
	return out
}

package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

// Resources the server starts serving while the collector runs (the
// resources of CustomResourceDefinitions) are added with AddResource and
// removed with RemoveResource, as upstream's collector follows discovery.
// Each gets a metadata informer of its own, which the collector runs
// itself, under the context of the cache Caches returns last; the
// resources of Config.Resources never change.

// runtimeResources are the informers of the resources added at runtime.
type runtimeResources struct {
	// mu serializes adds and removes; it is held while a removed
	// resource's informer stops.
	mu sync.Mutex
	// ctx is the context of runtimeCache.Run while it runs (nil before,
	// and again after).
	ctx     context.Context
	started bool
	running map[schema.GroupVersionResource]*runtimeInformer
}

// runtimeInformer is a resource added at runtime.
type runtimeInformer struct {
	w      *watched
	cancel context.CancelFunc // nil until started
	done   chan struct{}      // closed once its informer stopped
}

// AddResource starts watching a resource the server began serving at
// runtime. Adding a resource already added is a no-op; a resource whose
// group-version-resource or group-kind is already watched otherwise (a
// built-in one, or a runtime one with other names) is an error: remove
// that first. Its informer starts at once when the collector's caches
// run, and otherwise when they start.
func (g *GC) AddResource(r Resource) error {
	if err := r.validate(); err != nil {
		return err
	}
	g.rt.mu.Lock()
	defer g.rt.mu.Unlock()
	if cur := g.rt.running[r.GVR()]; cur != nil && cur.w.res == r {
		return nil
	}
	g.mu.RLock()
	byGVR, byKind := g.byGVR[r.GVR()], g.byKind[r.GroupKind()]
	g.mu.RUnlock()
	switch {
	case byGVR != nil:
		return fmt.Errorf("garbagecollector: %s is already watched as kind %s", r, byGVR.res.GroupKind())
	case byKind != nil:
		return fmt.Errorf("garbagecollector: kind %s is already watched as %s", r.GroupKind(), byKind.res)
	}
	// No metrics: a resource removed and added again would register its
	// collectors twice.
	own, err := informer.New(informer.Config[*metav1.PartialObjectMetadata]{
		JetStream: g.cfg.JetStream, Component: g.cfg.Component, Instance: g.cfg.Instance,
		Group: r.Group, Resource: r.Resource,
		New:    func() *metav1.PartialObjectMetadata { return &metav1.PartialObjectMetadata{} },
		Logger: g.cfg.Logger,
	})
	if err != nil {
		return fmt.Errorf("creating the %s metadata informer: %w", r, err)
	}
	own.AddHandler(g.handler(r))
	ri := &runtimeInformer{w: &watched{res: r, inf: own, own: own, runtime: true}}
	g.rt.running[r.GVR()] = ri
	g.watch(ri.w)
	if g.rt.ctx != nil {
		g.startLocked(ri)
	}
	g.log.Info("watching a resource served at runtime", "resource", r.String(), "version", r.Version, "kind", r.Kind)
	return nil
}

// RemoveResource stops watching a resource AddResource added, once the
// server no longer serves it: its informer stops and its objects leave
// the graph, so that their dependents are looked at again. It does
// nothing unless r is exactly what was added.
func (g *GC) RemoveResource(r Resource) {
	g.rt.mu.Lock()
	defer g.rt.mu.Unlock()
	ri := g.rt.running[r.GVR()]
	if ri == nil || ri.w.res != r {
		return
	}
	delete(g.rt.running, r.GVR())
	g.mu.Lock()
	delete(g.byGVR, r.GVR())
	delete(g.byKind, r.GroupKind())
	for i, w := range g.watched {
		if w == ri.w {
			g.watched = append(g.watched[:i:i], g.watched[i+1:]...)
			break
		}
	}
	g.mu.Unlock()
	if ri.cancel != nil {
		ri.cancel()
		<-ri.done // no handler runs after this
	}
	for _, obj := range ri.w.own.List() {
		g.enqueue(g.graph.Forget(obj))
	}
	g.log.Info("stopped watching a resource no longer served", "resource", r.String())
}

// startLocked runs a runtime informer under the runtime context; rt.mu is
// held and rt.ctx is set.
func (g *GC) startLocked(ri *runtimeInformer) {
	ctx, cancel := context.WithCancel(g.rt.ctx)
	ri.cancel, ri.done = cancel, make(chan struct{})
	go func() {
		defer close(ri.done)
		if err := ri.w.own.Run(ctx); err != nil {
			g.log.Error("the informer of a resource served at runtime stopped", "resource", ri.w.res.String(), "err", err)
		}
	}()
}

// runtimeCache runs the informers of the resources added at runtime, as
// one controllers.Cache. It counts as synced at once: the collector never
// judges an owner absent from its cache alone, and the informers of
// resources added later are not waited for either.
type runtimeCache struct{ g *GC }

var _ controllers.Cache = runtimeCache{}

// errRuntimeRunning: the runtime cache was run twice.
var errRuntimeRunning = errors.New("garbagecollector: the runtime informers already run")

// Run runs the runtime informers, those added before and those added
// while it runs, until ctx ends, and returns once they stopped.
func (c runtimeCache) Run(ctx context.Context) error {
	g := c.g
	g.rt.mu.Lock()
	if g.rt.started {
		g.rt.mu.Unlock()
		return errRuntimeRunning
	}
	g.rt.started, g.rt.ctx = true, ctx
	for _, ri := range g.rt.running {
		g.startLocked(ri)
	}
	g.rt.mu.Unlock()
	<-ctx.Done()
	g.rt.mu.Lock()
	defer g.rt.mu.Unlock()
	g.rt.ctx = nil
	for _, ri := range g.rt.running {
		if ri.done != nil {
			<-ri.done
		}
	}
	return nil
}

// HasSynced is true: see runtimeCache.
func (runtimeCache) HasSynced() bool { return true }

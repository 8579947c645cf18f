package garbagecollector

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

// Event reasons.
const (
	// ReasonOwnerRefInvalidNamespace: a cluster-scoped object names a
	// namespaced owner, which cannot exist; the reference counts as absent.
	ReasonOwnerRefInvalidNamespace = "OwnerRefInvalidNamespace"
	// ReasonFailedDelete: deleting an object whose owners are gone failed.
	ReasonFailedDelete = "FailedGarbageCollection"
	// ReasonFailedPatch: removing an ownerReference or a finalizer failed.
	ReasonFailedPatch = "FailedOwnerReferencePatch"
)

// MetadataInformer is the cache the collector keeps of a resource no
// other cache of the process holds.
type MetadataInformer = informer.Informer[*metav1.PartialObjectMetadata]

// Objects is the collector's view of one resource's cache: its own
// MetadataInformer, or a typed cache shared with the rest of the process
// (informer.Metadata).
type Objects interface {
	Get(namespace, name string) (*metav1.PartialObjectMetadata, bool)
	ListNamespace(namespace string) []*metav1.PartialObjectMetadata
	AddHandler(h informer.Handler[*metav1.PartialObjectMetadata])
	HasSynced() bool
}

// GC is the garbage collector. It is a controllers.Runnable; its informers
// (Caches) must run as the manager's caches.
type GC struct {
	cfg   Config
	log   *slog.Logger
	graph *Graph
	ctrl  *controllers.Controller
	// mu guards watched, byGVR and byKind, which change when resources
	// are added or removed at runtime (see AddResource).
	mu      sync.RWMutex
	watched []*watched
	byGVR   map[schema.GroupVersionResource]*watched
	byKind  map[schema.GroupKind]*watched
	// The resources added at runtime (runtime.go).
	rt        runtimeResources
	absent    *uidSet
	unknownMu sync.Mutex
	unknown   map[schema.GroupKind]bool // kinds already logged as not watched
}

type watched struct {
	res Resource
	inf Objects
	own *MetadataInformer // nil when inf is shared
	// runtime: added by AddResource; the runtime cache runs own.
	runtime bool
}

var (
	_ controllers.Runnable   = (*GC)(nil)
	_ controllers.Reconciler = (*GC)(nil)
)

// New creates the collector and its informers, one per resource, and adds
// its handlers to them.
func New(cfg Config) (*GC, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	g := &GC{
		cfg:     cfg,
		log:     cfg.Logger.With("controller", "garbagecollector"),
		graph:   NewGraph(),
		byGVR:   map[schema.GroupVersionResource]*watched{},
		byKind:  map[schema.GroupKind]*watched{},
		rt:      runtimeResources{running: map[schema.GroupVersionResource]*runtimeInformer{}},
		absent:  newUIDSet(absentCacheSize),
		unknown: map[schema.GroupKind]bool{},
	}
	g.ctrl = controllers.New("garbagecollector", g, controllers.Options{Workers: cfg.Workers, Logger: cfg.Logger})
	for _, r := range cfg.Resources {
		w := &watched{res: r, inf: cfg.Shared[r.GVR().GroupResource()]}
		if w.inf == nil {
			own, err := informer.New(informer.Config[*metav1.PartialObjectMetadata]{
				JetStream: cfg.JetStream, Component: cfg.Component, Instance: cfg.Instance,
				Group: r.Group, Resource: r.Resource,
				New:    func() *metav1.PartialObjectMetadata { return &metav1.PartialObjectMetadata{} },
				Logger: cfg.Logger, Metrics: cfg.Metrics,
			})
			if err != nil {
				return nil, fmt.Errorf("creating the %s metadata informer: %w", r, err)
			}
			w.inf, w.own = own, own
		}
		w.inf.AddHandler(g.handler(r))
		g.watch(w)
	}
	return g, nil
}

// watch records w as watched.
func (g *GC) watch(w *watched) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.watched = append(g.watched, w)
	g.byGVR[w.res.GVR()] = w
	g.byKind[w.res.GroupKind()] = w
}

// lookup returns the watched entry of a kind (nil when not watched).
func (g *GC) lookup(gk schema.GroupKind) *watched {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.byKind[gk]
}

func (g *GC) handler(r Resource) informer.Handler[*metav1.PartialObjectMetadata] {
	return informer.HandlerFuncs[*metav1.PartialObjectMetadata]{
		AddFunc: func(obj *metav1.PartialObjectMetadata) { g.enqueue(g.graph.Observe(r, obj)) },
		UpdateFunc: func(old, obj *metav1.PartialObjectMetadata) {
			if old.UID != obj.UID { // deleted and created again under the name
				g.enqueue(g.graph.Forget(old))
			}
			g.enqueue(g.graph.Observe(r, obj))
		},
		DeleteFunc: func(obj *metav1.PartialObjectMetadata) { g.enqueue(g.graph.Forget(obj)) },
	}
}

func (g *GC) enqueue(uids []types.UID) {
	for _, u := range uids {
		g.ctrl.Enqueue(keyOf(u))
	}
}

// keyOf is the work-queue key of an object: its UID.
func keyOf(uid types.UID) controllers.Request { return controllers.Request{Name: string(uid)} }

// Caches returns the informers the collector made (not the shared ones,
// which their owner runs), for controllers.Manager.AddCache, and one more
// that runs the informers of the resources added at runtime
// (AddResource). Call it once.
func (g *GC) Caches() []controllers.Cache {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]controllers.Cache, 0, len(g.watched)+1)
	for _, w := range g.watched {
		if w.own != nil && !w.runtime {
			out = append(out, w.own)
		}
	}
	return append(out, runtimeCache{g: g})
}

// Informer returns the metadata cache of a resource (nil when it is not
// watched). Other controllers may read it, such as the namespace
// controller, which counts what is left in a namespace.
func (g *GC) Informer(gvr schema.GroupVersionResource) Objects {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if w := g.byGVR[gvr]; w != nil {
		return w.inf
	}
	return nil
}

// Graph returns the ownerReference graph (read-only for callers).
func (g *GC) Graph() *Graph { return g.graph }

// Run reconciles until ctx ends (controllers.Runnable).
func (g *GC) Run(ctx context.Context) {
	g.mu.RLock()
	n := len(g.watched)
	g.mu.RUnlock()
	g.log.Debug("garbage collector starting", "resources", n, "objects", g.graph.Len())
	g.ctrl.Run(ctx)
}

// Reconcile looks at one object, by UID (controllers.Reconciler).
func (g *GC) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	res, obj, ok := g.graph.Get(types.UID(req.Name))
	if !ok {
		return controllers.Result{}, nil // gone; its deletion queued what it affects
	}
	var err error
	switch {
	case obj.DeletionTimestamp != nil:
		err = g.processOwner(ctx, res, obj)
	case len(obj.OwnerReferences) > 0:
		err = g.processDependent(ctx, res, obj)
	}
	return controllers.Result{}, err
}

// processOwner carries out the orphan or foregroundDeletion finalizer of
// an object being deleted.
func (g *GC) processOwner(ctx context.Context, res Resource, obj *metav1.PartialObjectMetadata) error {
	p := planOwner(obj, g.graph.Dependents(obj.UID))
	for _, d := range p.Orphan {
		if err := g.orphan(ctx, d, obj.UID); err != nil {
			return err
		}
	}
	for _, uid := range p.Delete {
		g.ctrl.Enqueue(keyOf(uid))
	}
	if p.RemoveFinalizer == "" {
		if p.Blocking > 0 {
			g.log.Debug("waiting for blocking dependents", "object", describe(res, obj), "blocking", p.Blocking)
		}
		return nil
	}
	return g.removeFinalizer(ctx, res, obj, p.RemoveFinalizer)
}

// orphan removes a dependent's reference to owner.
func (g *GC) orphan(ctx context.Context, d Dependent, owner types.UID) error {
	cur, err := g.latest(ctx, d.Resource, d.Object)
	if cur == nil || err != nil {
		return err
	}
	patch := removeRefsPatch(cur, []types.UID{owner})
	if patch == nil {
		return nil
	}
	if _, err := g.patch(ctx, d.Resource, cur, patch); err != nil {
		return fmt.Errorf("orphaning %s: %w", describe(d.Resource, cur), err)
	}
	g.log.Debug("orphaned", "object", describe(d.Resource, cur), "owner", owner)
	return nil
}

// removeFinalizer removes a GC finalizer from an owner; the API server
// removes the owner when it was the last one.
func (g *GC) removeFinalizer(ctx context.Context, res Resource, obj *metav1.PartialObjectMetadata, finalizer string) error {
	cur, err := g.latest(ctx, res, obj)
	if cur == nil || err != nil {
		return err
	}
	patch := removeFinalizerPatch(cur, finalizer)
	if patch == nil {
		return nil
	}
	if _, err := g.patch(ctx, res, cur, patch); err != nil {
		return fmt.Errorf("removing the %s finalizer of %s: %w", finalizer, describe(res, cur), err)
	}
	g.log.Debug("removed finalizer", "object", describe(res, cur), "finalizer", finalizer)
	return nil
}

// processDependent deletes an object whose owners are all gone (or waiting)
// or drops its references to owners that are.
func (g *GC) processDependent(ctx context.Context, res Resource, obj *metav1.PartialObjectMetadata) error {
	checks, err := g.checkOwners(ctx, res, obj)
	if err != nil {
		return err
	}
	deps := g.graph.Dependents(obj.UID)
	p := planDependent(obj, checks, deps)
	if !p.Delete && len(p.RemoveRefs) == 0 {
		return nil
	}
	// Act on the latest version: the cache may lag behind a change that
	// made the plan moot (a reference removed by an orphaning owner).
	cur, err := g.latest(ctx, res, obj)
	if cur == nil || err != nil {
		return err
	}
	if !apiequality.Semantic.DeepEqual(cur.OwnerReferences, obj.OwnerReferences) || cur.DeletionTimestamp != nil {
		if checks, err = g.checkOwners(ctx, res, cur); err != nil {
			return err
		}
		p = planDependent(cur, checks, deps)
	}
	switch {
	case len(p.RemoveRefs) > 0:
		if _, err := g.patch(ctx, res, cur, removeRefsPatch(cur, p.RemoveRefs)); err != nil {
			return fmt.Errorf("removing dangling ownerReferences of %s: %w", describe(res, cur), err)
		}
		g.log.Debug("removed ownerReferences", "object", describe(res, cur), "owners", p.RemoveRefs)
	case p.Delete:
		if patch := unblockPatch(cur, p.Unblock); patch != nil {
			out, err := g.patch(ctx, res, cur, patch)
			if out == nil || err != nil {
				return wrap(err, "unblocking the ownerReferences of %s", describe(res, cur))
			}
			cur = out
		}
		return g.delete(ctx, res, cur, p.Policy)
	}
	return nil
}

// delete deletes an object as read (UID and resourceVersion preconditions).
// When only its resourceVersion changed, and not its ownerReferences, it
// deletes it with the UID precondition alone.
func (g *GC) delete(ctx context.Context, res Resource, cur *metav1.PartialObjectMetadata, policy metav1.DeletionPropagation) error {
	c := g.client(res, cur.Namespace)
	opts := metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion}}
	err := c.Delete(ctx, cur.Name, opts)
	if apierrors.IsConflict(err) {
		again, gerr := g.latest(ctx, res, cur)
		if again == nil || gerr != nil {
			return gerr
		}
		if !apiequality.Semantic.DeepEqual(again.OwnerReferences, cur.OwnerReferences) {
			return err // judged on old references: look again
		}
		opts.Preconditions.ResourceVersion = nil
		err = c.Delete(ctx, cur.Name, opts)
	}
	switch {
	case err == nil:
		g.log.Debug("deleted", "object", describe(res, cur), "propagation", policy)
		return nil
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return fmt.Errorf("deleting %s: %w", describe(res, cur), err)
	}
	return g.failed(res, cur, ReasonFailedDelete, fmt.Errorf("deleting %s: %w", describe(res, cur), err))
}

// checkOwners looks up every owner of obj.
func (g *GC) checkOwners(ctx context.Context, res Resource, obj *metav1.PartialObjectMetadata) ([]ownerCheck, error) {
	out := make([]ownerCheck, 0, len(obj.OwnerReferences))
	for _, ref := range obj.OwnerReferences {
		st, err := g.ownerState(ctx, res, obj, ref)
		if err != nil {
			return nil, err
		}
		out = append(out, ownerCheck{ref: ref, state: st})
	}
	return out, nil
}

// ownerState looks an owner up: in the cache first, and through the API
// before it is called absent or waiting.
func (g *GC) ownerState(ctx context.Context, res Resource, obj *metav1.PartialObjectMetadata, ref metav1.OwnerReference) (ownerState, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		g.log.Debug("ownerReference with a bad apiVersion counts as present", "object", describe(res, obj), "apiVersion", ref.APIVersion)
		return ownerPresent, nil
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	w := g.lookup(gk)
	if w == nil {
		g.logUnknown(gk)
		return ownerPresent, nil
	}
	ns := ""
	if w.res.Namespaced {
		if obj.Namespace == "" {
			g.warn(res, obj, ReasonOwnerRefInvalidNamespace, "ownerReference to %s %q (uid %s) cannot hold: a cluster-scoped object cannot have a namespaced owner", ref.Kind, ref.Name, ref.UID)
			return ownerAbsent, nil
		}
		ns = obj.Namespace
	}
	if g.absent.has(ref.UID) {
		return ownerAbsent, nil
	}
	if cached, ok := w.inf.Get(ns, ref.Name); ok && cached.UID == ref.UID && !deletingDependents(cached) {
		return ownerPresent, nil
	}
	live, err := g.client(w.res, ns).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		g.absent.add(ref.UID)
		return ownerAbsent, nil
	case err != nil:
		return 0, fmt.Errorf("looking up %s %s/%s, owner of %s: %w", ref.Kind, ns, ref.Name, describe(res, obj), err)
	case live.UID != ref.UID:
		g.absent.add(ref.UID)
		return ownerAbsent, nil
	case deletingDependents(live):
		return ownerWaiting, nil
	}
	return ownerPresent, nil
}

func (g *GC) logUnknown(gk schema.GroupKind) {
	g.unknownMu.Lock()
	defer g.unknownMu.Unlock()
	if !g.unknown[gk] {
		g.unknown[gk] = true
		g.log.Info("ownerReferences to a kind the collector does not watch count as present", "kind", gk.String())
	}
}

// latest reads an object through the API; nil (and no error) when it is
// gone or another object has its name.
func (g *GC) latest(ctx context.Context, res Resource, obj *metav1.PartialObjectMetadata) (*metav1.PartialObjectMetadata, error) {
	cur, err := g.client(res, obj.Namespace).Get(ctx, obj.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", describe(res, obj), err)
	case cur.UID != obj.UID:
		return nil, nil
	}
	return cur, nil
}

// patch applies a JSON patch and returns the patched object (nil, and no
// error, when the object is gone). A failed test in the patch (the object
// changed since it was read) comes back as Invalid and is retried without
// an event.
func (g *GC) patch(ctx context.Context, res Resource, obj *metav1.PartialObjectMetadata, patch []byte) (*metav1.PartialObjectMetadata, error) {
	out, err := g.client(res, obj.Namespace).Patch(ctx, obj.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
	switch {
	case err == nil:
		return out, nil
	case apierrors.IsNotFound(err):
		return nil, nil
	case apierrors.IsConflict(err), apierrors.IsInvalid(err):
		return nil, err
	}
	return nil, g.failed(res, obj, ReasonFailedPatch, err)
}

// wrap adds context to a non-nil error.
func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

func (g *GC) client(res Resource, ns string) metadata.ResourceInterface {
	if !res.Namespaced {
		ns = ""
	}
	return g.cfg.Client.Resource(res.GVR()).Namespace(ns)
}

// failed records a Warning event about a failed write and returns err.
func (g *GC) failed(res Resource, obj *metav1.PartialObjectMetadata, reason string, err error) error {
	g.warn(res, obj, reason, "%v", err)
	return err
}

func (g *GC) warn(res Resource, obj *metav1.PartialObjectMetadata, reason, format string, args ...any) {
	if g.cfg.Recorder == nil {
		return
	}
	ref := &corev1.ObjectReference{
		Kind: res.Kind, APIVersion: schema.GroupVersion{Group: res.Group, Version: res.Version}.String(),
		Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID, ResourceVersion: obj.ResourceVersion,
	}
	g.cfg.Recorder.Eventf(ref, corev1.EventTypeWarning, reason, format, args...)
}

func describe(res Resource, obj *metav1.PartialObjectMetadata) string {
	if obj.Namespace == "" {
		return res.String() + " " + obj.Name
	}
	return res.String() + " " + obj.Namespace + "/" + obj.Name
}

// absentCacheSize bounds the set of owner UIDs confirmed absent.
const absentCacheSize = 4096

// uidSet remembers owner UIDs confirmed absent, so many dependents of one
// deleted owner cost one lookup. UIDs are never reused, so an entry never
// goes stale; when full, the set starts over.
type uidSet struct {
	mu  sync.Mutex
	m   map[types.UID]struct{}
	max int
}

func newUIDSet(max int) *uidSet { return &uidSet{m: map[types.UID]struct{}{}, max: max} }

func (s *uidSet) has(u types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[u]
	return ok
}

func (s *uidSet) add(u types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= s.max {
		clear(s.m)
	}
	s.m[u] = struct{}{}
}

package garbagecollector

import (
	"slices"
	"strings"
	"sync"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Graph is the ownerReference graph of the objects the caches hold: every
// object by UID, and for every owner UID the objects naming it in their
// ownerReferences (whether or not the owner itself is known). It does no
// I/O; the caches' handlers feed it. It is safe for concurrent use. The
// objects it holds are shared with the caches: never modify them.
type Graph struct {
	mu         sync.RWMutex
	nodes      map[types.UID]node
	dependents map[types.UID]map[types.UID]struct{}
}

type node struct {
	res Resource
	obj *metav1.PartialObjectMetadata
}

// NewGraph returns an empty graph.
func NewGraph() *Graph {
	return &Graph{nodes: map[types.UID]node{}, dependents: map[types.UID]map[types.UID]struct{}{}}
}

// Observe records a new or changed object and returns the UIDs whose
// Reconcile the change may alter: the object itself when it is new with
// ownerReferences or being deleted, or when its ownerReferences, deletion
// timestamp or finalizers changed; and its old and new owners when its
// ownerReferences changed (a foreground owner waits on the set of its
// blocking dependents).
func (g *Graph) Observe(res Resource, obj *metav1.PartialObjectMetadata) []types.UID {
	g.mu.Lock()
	defer g.mu.Unlock()
	uid := obj.UID
	prev, had := g.nodes[uid]
	g.nodes[uid] = node{res: res, obj: obj}
	if !had {
		for _, r := range obj.OwnerReferences {
			g.link(r.UID, uid)
		}
		if len(obj.OwnerReferences) > 0 || obj.DeletionTimestamp != nil {
			return []types.UID{uid}
		}
		return nil
	}
	old := prev.obj
	refsChanged := !apiequality.Semantic.DeepEqual(old.OwnerReferences, obj.OwnerReferences)
	deletionChanged := (old.DeletionTimestamp == nil) != (obj.DeletionTimestamp == nil) ||
		!slices.Equal(old.Finalizers, obj.Finalizers)
	if !refsChanged && !deletionChanged {
		return nil
	}
	out := []types.UID{uid}
	if refsChanged {
		for _, r := range old.OwnerReferences {
			g.unlink(r.UID, uid)
		}
		for _, r := range obj.OwnerReferences {
			g.link(r.UID, uid)
		}
		for _, r := range append(slices.Clone(old.OwnerReferences), obj.OwnerReferences...) {
			if !slices.Contains(out, r.UID) {
				out = append(out, r.UID)
			}
		}
	}
	return out
}

// Forget removes a deleted object and returns the UIDs to reconcile: its
// dependents (their owner is gone) and then its owners (a foreground owner
// may have been waiting for it).
func (g *Graph) Forget(obj *metav1.PartialObjectMetadata) []types.UID {
	g.mu.Lock()
	defer g.mu.Unlock()
	uid := obj.UID
	refs := obj.OwnerReferences
	if n, ok := g.nodes[uid]; ok {
		refs = n.obj.OwnerReferences // the edges that are recorded
		delete(g.nodes, uid)
	}
	for _, r := range refs {
		g.unlink(r.UID, uid)
	}
	out := g.sortedDependents(uid)
	for _, r := range refs {
		if !slices.Contains(out, r.UID) {
			out = append(out, r.UID)
		}
	}
	return out
}

// Get returns an object the caches hold, with its resource.
func (g *Graph) Get(uid types.UID) (Resource, *metav1.PartialObjectMetadata, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[uid]
	return n.res, n.obj, ok
}

// Dependents returns the known objects that name uid as an owner, ordered
// by namespace and name.
func (g *Graph) Dependents(uid types.UID) []Dependent {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []Dependent
	for d := range g.dependents[uid] {
		if n, ok := g.nodes[d]; ok {
			out = append(out, Dependent{Resource: n.res, Object: n.obj})
		}
	}
	slices.SortFunc(out, func(a, b Dependent) int {
		if c := strings.Compare(a.Object.Namespace, b.Object.Namespace); c != 0 {
			return c
		}
		if c := strings.Compare(a.Object.Name, b.Object.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Resource.String(), b.Resource.String())
	})
	return out
}

// Len returns the number of objects in the graph.
func (g *Graph) Len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.nodes)
}

// Dependent is an object that names an owner, with its resource.
type Dependent struct {
	Resource Resource
	Object   *metav1.PartialObjectMetadata
}

func (g *Graph) link(owner, dep types.UID) {
	set := g.dependents[owner]
	if set == nil {
		set = map[types.UID]struct{}{}
		g.dependents[owner] = set
	}
	set[dep] = struct{}{}
}

func (g *Graph) unlink(owner, dep types.UID) {
	if set := g.dependents[owner]; set != nil {
		delete(set, dep)
		if len(set) == 0 {
			delete(g.dependents, owner)
		}
	}
}

// sortedDependents returns the UIDs of uid's dependents, in a stable order.
func (g *Graph) sortedDependents(uid types.UID) []types.UID {
	out := make([]types.UID, 0, len(g.dependents[uid]))
	for d := range g.dependents[uid] {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

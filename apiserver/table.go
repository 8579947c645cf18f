package apiserver

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver/resource"
)

// table is what the server serves: the built-in rows, fixed at start, and
// the rows of custom resources, added and removed at runtime as their
// CustomResourceDefinitions come and go. Reads take a shared lock; the
// table changes only when a CRD does.
type table struct {
	mu      sync.RWMutex
	byGVR   map[schema.GroupVersionResource]*resource.Resource
	order   []*resource.Resource
	builtin int // order[:builtin] are the built-in rows
}

func newTable(rows []*resource.Resource) (*table, error) {
	t := &table{byGVR: map[schema.GroupVersionResource]*resource.Resource{}}
	if err := t.add(rows); err != nil {
		return nil, err
	}
	t.builtin = len(t.order)
	return t, nil
}

func gvrOf(res *resource.Resource) schema.GroupVersionResource {
	return res.GVK.GroupVersion().WithResource(res.Plural)
}

// get returns the row serving gvr.
func (t *table) get(gvr schema.GroupVersionResource) (*resource.Resource, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	res, ok := t.byGVR[gvr]
	return res, ok
}

// all returns every row, the built-in ones first, in the order added.
func (t *table) all() []*resource.Resource {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return append([]*resource.Resource(nil), t.order...)
}

// builtins returns the built-in rows.
func (t *table) builtins() []*resource.Resource {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return append([]*resource.Resource(nil), t.order[:t.builtin]...)
}

// add adds rows, all or none: a resource already served is an error.
func (t *table) add(rows []*resource.Resource) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	seen := map[schema.GroupVersionResource]bool{}
	for _, res := range rows {
		gvr := gvrOf(res)
		if _, dup := t.byGVR[gvr]; dup || seen[gvr] {
			return fmt.Errorf("apiserver: resource %s listed twice", gvr)
		}
		seen[gvr] = true
	}
	for _, res := range rows {
		t.byGVR[gvrOf(res)] = res
		t.order = append(t.order, res)
	}
	return nil
}

// remove drops rows added at runtime (built-in rows stay).
func (t *table) remove(rows []*resource.Resource) {
	t.mu.Lock()
	defer t.mu.Unlock()
	drop := map[*resource.Resource]bool{}
	for _, res := range rows {
		if t.byGVR[gvrOf(res)] == res {
			delete(t.byGVR, gvrOf(res))
			drop[res] = true
		}
	}
	kept := t.order[:t.builtin:t.builtin]
	for _, res := range t.order[t.builtin:] {
		if !drop[res] {
			kept = append(kept, res)
		}
	}
	t.order = kept
}

// stopHubs ends the watch hubs of rows no longer served: their watchers'
// streams end, and they find the resource gone when they come back.
func (s *Server) stopHubs(rows []*resource.Resource) {
	s.hubsMu.Lock()
	defer s.hubsMu.Unlock()
	for _, res := range rows {
		if h, ok := s.hubs[res]; ok {
			h.stop()
			delete(s.hubs, res)
		}
	}
}

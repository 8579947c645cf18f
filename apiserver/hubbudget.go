package apiserver

import (
	"maps"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebus/kubebus/apiserver/resource"
)

// DefaultWatchCacheBytes bounds the bytes every watch hub's ring of recent
// events holds together, per API server (Config.WatchCacheBytes).
const DefaultWatchCacheBytes = 64 << 20

// attrs is what a selection matches of an object: its labels and its
// field-selector attributes.
type attrs struct {
	labels labels.Set
	fields fields.Set
}

func attrsOf(res *resource.Resource, obj runtime.Object) *attrs {
	a := &attrs{fields: res.FieldSet(obj)}
	if m, err := meta.Accessor(obj); err == nil && len(m.GetLabels()) > 0 {
		a.labels = m.GetLabels()
	}
	return a
}

func (a *attrs) equal(b *attrs) bool {
	return maps.Equal(a.labels, b.labels) && maps.Equal(a.fields, b.fields)
}

// attrsEntryOverhead approximates a map entry's cost beyond its strings.
const attrsEntryOverhead = 48

func (a *attrs) size() int64 {
	n := int64(64)
	for k, v := range a.labels {
		n += int64(len(k) + len(v) + attrsEntryOverhead)
	}
	for k, v := range a.fields {
		n += int64(len(k) + len(v) + attrsEntryOverhead)
	}
	return n
}

// matchesAttrs is matches for an object known by its attributes.
func (sel selection) matchesAttrs(a *attrs) bool {
	if sel.everything {
		return true
	}
	if !sel.labels.Matches(a.labels) {
		return false
	}
	return sel.fields.Empty() || sel.fields.Matches(a.fields)
}

// ringBudget bounds the bytes of every hub's ring together. Over the
// limit, the hub that holds the most drops its oldest events: a busy
// resource gives way before a quiet one loses its little history.
type ringBudget struct {
	limit int64
	used  atomic.Int64

	mu   sync.Mutex // serialises trims; guards hubs. Taken before any hub's mu.
	hubs map[*hub]struct{}
}

func newRingBudget(limit int64) *ringBudget {
	return &ringBudget{limit: limit, hubs: map[*hub]struct{}{}}
}

func (b *ringBudget) add(h *hub) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hubs[h] = struct{}{}
}

func (b *ringBudget) remove(h *hub) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.hubs, h)
}

// trim evicts until the rings fit the limit. Callers hold no hub's mu.
func (b *ringBudget) trim() {
	if b.used.Load() <= b.limit {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.used.Load() > b.limit {
		var big *hub
		var bigBytes int64
		for h := range b.hubs {
			if n := h.ringBytes.Load(); n > bigBytes {
				big, bigBytes = h, n
			}
		}
		if big == nil || big.evict(b.used.Load()-b.limit) == 0 {
			return
		}
	}
}

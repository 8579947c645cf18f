package apiserver

import (
	"maps"
	"slices"
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
// field-selector attributes, as flat key/value lists (a few entries each;
// a map per event would cost several times the bytes).
type attrs struct {
	labels kvList
	fields kvList
}

func attrsOf(res *resource.Resource, obj runtime.Object) *attrs {
	a := &attrs{fields: newKVList(res.FieldSet(obj))}
	if m, err := meta.Accessor(obj); err == nil {
		a.labels = newKVList(m.GetLabels())
	}
	return a
}

func (a *attrs) equal(b *attrs) bool {
	return slices.Equal(a.labels, b.labels) && slices.Equal(a.fields, b.fields)
}

func (a *attrs) size() int64 {
	n := int64(48 + 16*(len(a.labels)+len(a.fields)))
	for _, s := range a.labels {
		n += int64(len(s))
	}
	for _, s := range a.fields {
		n += int64(len(s))
	}
	return n
}

// kvList is key, value, key, value... sorted by key; it implements
// labels.Labels and fields.Fields.
type kvList []string

var (
	_ labels.Labels = kvList(nil)
	_ fields.Fields = kvList(nil)
)

func newKVList(m map[string]string) kvList {
	if len(m) == 0 {
		return nil
	}
	keys := slices.Sorted(maps.Keys(m))
	out := make(kvList, 0, 2*len(keys))
	for _, k := range keys {
		out = append(out, k, m[k])
	}
	return out
}

// Lookup returns a key's value and whether the key is there.
func (l kvList) Lookup(key string) (string, bool) {
	for i := 0; i+1 < len(l); i += 2 {
		if l[i] == key {
			return l[i+1], true
		}
	}
	return "", false
}

// Has reports whether the key is there.
func (l kvList) Has(key string) bool {
	_, ok := l.Lookup(key)
	return ok
}

// Get returns a key's value ("" when absent).
func (l kvList) Get(key string) string {
	v, _ := l.Lookup(key)
	return v
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

package informer

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/kubebus/kubebus/bus"
)

// objKey names an object in the cache.
type objKey struct{ namespace, name string }

// item is a cached object and the revision of the event it came from.
type item[T any] struct {
	obj T
	rev int64
}

type changeKind int

const (
	added changeKind = iota + 1
	updated
	deleted
)

func (k changeKind) String() string {
	switch k {
	case added:
		return "add"
	case updated:
		return "update"
	case deleted:
		return "delete"
	}
	return "?"
}

// change is what a handler is told.
type change[T any] struct {
	kind     changeKind
	old, obj T
}

// snapshot is the latest state of every object, read from KUBE_STATE.
type snapshot[T any] struct {
	objs  map[objKey]item[T]
	tombs map[objKey]int64 // revisions of deletions
	// bad are objects whose latest event could not be read; the cache
	// keeps what it has for them.
	bad map[objKey]struct{}
	// maxRev is the highest revision read, tombstones included.
	maxRev int64
}

func newSnapshot[T any]() *snapshot[T] {
	return &snapshot[T]{objs: map[objKey]item[T]{}, tombs: map[objKey]int64{}, bad: map[objKey]struct{}{}}
}

// add records an event, keeping the newest per key.
func (s *snapshot[T]) add(k objKey, obj T, rev int64, tombstone bool) {
	s.maxRev = max(s.maxRev, rev)
	if cur, ok := s.objs[k]; ok && cur.rev >= rev {
		return
	}
	if t, ok := s.tombs[k]; ok && t >= rev {
		return
	}
	if tombstone {
		delete(s.objs, k)
		s.tombs[k] = rev
		return
	}
	delete(s.tombs, k)
	s.objs[k] = item[T]{obj, rev}
}

type keySet map[objKey]struct{}

// store is the informer's indexed cache: the current objects only, plus the
// revisions of recent deletions, which keep older events from bringing an
// object back. It makes no I/O; the informer's goroutine is its only
// writer.
type store[T runtime.Object] struct {
	mu       sync.RWMutex
	objs     map[objKey]item[T]
	byNS     map[string]keySet
	byLabel  map[string]keySet // "key=value"
	indexers map[string]IndexFunc[T]
	indexes  map[string]map[string]keySet // index name -> value -> keys

	tombs   map[objKey]int64
	maxTomb int64
}

func newStore[T runtime.Object](indexers map[string]IndexFunc[T]) *store[T] {
	s := &store[T]{
		objs: map[objKey]item[T]{}, byNS: map[string]keySet{}, byLabel: map[string]keySet{},
		indexers: indexers, indexes: map[string]map[string]keySet{}, tombs: map[objKey]int64{},
	}
	for name := range indexers {
		s.indexes[name] = map[string]keySet{}
	}
	return s
}

// apply applies a live event. A deletion's obj is the object's last state;
// when haveObj is false the cached object stands in for it. It reports
// false when the event is not newer than what the cache holds.
func (s *store[T]) apply(k objKey, typ bus.EventType, obj T, haveObj bool, rev int64) (change[T], bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tombs) > 0 && s.maxTomb < rev {
		// Live events come in revision order: no later event can be older
		// than these deletions.
		s.tombs = map[objKey]int64{}
	}
	cur, ok := s.objs[k]
	if (ok && rev <= cur.rev) || (!ok && rev <= s.tombs[k]) {
		return change[T]{}, false
	}
	if typ == bus.Deleted {
		// Remember it until the next live event: a resync before then may
		// still read the object's previous state.
		s.tombs[k], s.maxTomb = rev, max(s.maxTomb, rev)
		if !ok {
			return change[T]{}, false
		}
		s.remove(k, cur.obj)
		if !haveObj {
			obj = cur.obj
		}
		return change[T]{kind: deleted, obj: obj}, true
	}
	delete(s.tombs, k)
	if ok {
		s.remove(k, cur.obj)
	}
	s.insert(k, obj, rev)
	if ok {
		return change[T]{kind: updated, old: cur.obj, obj: obj}, true
	}
	return change[T]{kind: added, obj: obj}, true
}

// reconcile makes the cache match a snapshot and returns what changed. An
// entry the cache holds at a newer revision than the snapshot stays: the
// snapshot can lag the live stream by the event being applied.
func (s *store[T]) reconcile(snap *snapshot[T]) []change[T] {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []change[T]
	for k, it := range snap.objs {
		cur, ok := s.objs[k]
		switch {
		case !ok:
			if it.rev <= s.tombs[k] {
				continue
			}
			s.insert(k, it.obj, it.rev)
			out = append(out, change[T]{kind: added, obj: it.obj})
		case it.rev > cur.rev:
			s.remove(k, cur.obj)
			s.insert(k, it.obj, it.rev)
			out = append(out, change[T]{kind: updated, old: cur.obj, obj: it.obj})
		}
	}
	for k, cur := range s.objs {
		if _, ok := snap.objs[k]; ok {
			continue
		}
		if _, ok := snap.bad[k]; ok {
			continue
		}
		if t, ok := snap.tombs[k]; (ok && t < cur.rev) || (!ok && cur.rev > snap.maxRev) {
			continue
		}
		s.remove(k, cur.obj)
		out = append(out, change[T]{kind: deleted, obj: cur.obj})
	}
	for k, t := range snap.tombs {
		if t > s.tombs[k] {
			s.tombs[k] = t
		}
		s.maxTomb = max(s.maxTomb, t)
	}
	return out
}

func meta(obj any) metav1.Object { return obj.(metav1.Object) }

func (s *store[T]) insert(k objKey, obj T, rev int64) {
	s.objs[k] = item[T]{obj, rev}
	addKey(s.byNS, k.namespace, k)
	for lk, lv := range meta(obj).GetLabels() {
		addKey(s.byLabel, lk+"="+lv, k)
	}
	for name, f := range s.indexers {
		for _, v := range f(obj) {
			addKey(s.indexes[name], v, k)
		}
	}
}

// remove drops k, whose cached object is obj.
func (s *store[T]) remove(k objKey, obj T) {
	delete(s.objs, k)
	delKey(s.byNS, k.namespace, k)
	for lk, lv := range meta(obj).GetLabels() {
		delKey(s.byLabel, lk+"="+lv, k)
	}
	for name, f := range s.indexers {
		for _, v := range f(obj) {
			delKey(s.indexes[name], v, k)
		}
	}
}

func addKey(idx map[string]keySet, v string, k objKey) {
	set := idx[v]
	if set == nil {
		set = keySet{}
		idx[v] = set
	}
	set[k] = struct{}{}
}

func delKey(idx map[string]keySet, v string, k objKey) {
	set := idx[v]
	delete(set, k)
	if len(set) == 0 {
		delete(idx, v)
	}
}

func (s *store[T]) get(k objKey) (T, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	it, ok := s.objs[k]
	return it.obj, ok
}

func (s *store[T]) len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.objs)
}

func (s *store[T]) list() []T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]T, 0, len(s.objs))
	for _, it := range s.objs {
		out = append(out, it.obj)
	}
	return out
}

// collect returns the objects of a key set; the caller holds the lock.
func (s *store[T]) collect(set keySet) []T {
	out := make([]T, 0, len(set))
	for k := range set {
		out = append(out, s.objs[k].obj)
	}
	return out
}

func (s *store[T]) listNamespace(ns string) []T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.collect(s.byNS[ns])
}

func (s *store[T]) byIndex(name, value string) []T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.collect(s.indexes[name][value])
}

// byLabels narrows the search with the selector's most selective equality
// or set requirement, then matches each candidate.
func (s *store[T]) byLabels(sel labels.Selector) []T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var candidates keySet
	found := false
	if reqs, ok := sel.Requirements(); ok {
		for _, r := range reqs {
			switch r.Operator() {
			case selection.Equals, selection.DoubleEquals, selection.In:
			default:
				continue
			}
			set := keySet{}
			for v := range r.Values() {
				for k := range s.byLabel[r.Key()+"="+v] {
					set[k] = struct{}{}
				}
			}
			if !found || len(set) < len(candidates) {
				candidates, found = set, true
			}
		}
	}
	var out []T
	match := func(k objKey) {
		obj := s.objs[k].obj
		if sel.Matches(labels.Set(meta(obj).GetLabels())) {
			out = append(out, obj)
		}
	}
	if found {
		for k := range candidates {
			match(k)
		}
		return out
	}
	for k := range s.objs {
		match(k)
	}
	return out
}

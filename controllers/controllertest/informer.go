// Package controllertest holds what the controllers' unit tests share: an
// in-memory informer with the read API and handlers of bus/informer, whose
// Set and Remove play the bus events.
package controllertest

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers/cache"
)

// Informer is an in-memory cache of one resource. It knows the indexes
// cache.ByOwnerUID and cache.ByOrphanNamespace and panics on others.
type Informer[T runtime.Object] struct {
	mu       sync.Mutex
	objs     map[string]T
	handlers []informer.Handler[T]
}

// NewInformer returns an Informer holding objs (no handler is told).
func NewInformer[T runtime.Object](objs ...T) *Informer[T] {
	f := &Informer[T]{objs: map[string]T{}}
	for _, o := range objs {
		f.objs[Key(o)] = o
	}
	return f
}

// Meta is o's object metadata.
func Meta(o any) metav1.Object { return o.(metav1.Object) }

// Key is o's namespace/name.
func Key(o any) string { m := Meta(o); return m.GetNamespace() + "/" + m.GetName() }

// Get returns the object namespace/name.
func (f *Informer[T]) Get(namespace, name string) (T, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objs[namespace+"/"+name]
	return o, ok
}

func (f *Informer[T]) filter(keep func(metav1.Object) bool) []T {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []T
	for _, o := range f.objs {
		if keep(Meta(o)) {
			out = append(out, o)
		}
	}
	return out
}

// ListNamespace returns the objects of a namespace.
func (f *Informer[T]) ListNamespace(ns string) []T {
	return f.filter(func(m metav1.Object) bool { return m.GetNamespace() == ns })
}

// ByLabels returns the objects sel matches.
func (f *Informer[T]) ByLabels(sel labels.Selector) []T {
	return f.filter(func(m metav1.Object) bool { return sel.Matches(labels.Set(m.GetLabels())) })
}

// ByIndex returns the objects whose index value is value.
func (f *Informer[T]) ByIndex(index, value string) []T {
	switch index {
	case cache.ByOwnerUID:
		return f.filter(func(m metav1.Object) bool {
			for _, r := range m.GetOwnerReferences() {
				if string(r.UID) == value {
					return true
				}
			}
			return false
		})
	case cache.ByOrphanNamespace:
		return f.filter(func(m metav1.Object) bool {
			return m.GetNamespace() == value && metav1.GetControllerOfNoCopy(m) == nil
		})
	}
	panic("controllertest: unknown index " + index)
}

// AddHandler adds a handler for Set and Remove.
func (f *Informer[T]) AddHandler(h informer.Handler[T]) { f.handlers = append(f.handlers, h) }

// Put adds or replaces an object without telling the handlers: state the
// cache held before the event a test plays.
func (f *Informer[T]) Put(o T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objs[Key(o)] = o
}

// Set adds or replaces an object and tells the handlers.
func (f *Informer[T]) Set(o T) {
	f.mu.Lock()
	old, had := f.objs[Key(o)]
	f.objs[Key(o)] = o
	f.mu.Unlock()
	for _, h := range f.handlers {
		if had {
			h.OnUpdate(old, o)
		} else {
			h.OnAdd(o)
		}
	}
}

// Remove deletes an object and tells the handlers.
func (f *Informer[T]) Remove(o T) {
	f.mu.Lock()
	delete(f.objs, Key(o))
	f.mu.Unlock()
	for _, h := range f.handlers {
		h.OnDelete(o)
	}
}

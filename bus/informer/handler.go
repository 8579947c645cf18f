package informer

import "k8s.io/apimachinery/pkg/runtime"

// Handler receives the cache's changes, synchronously and in event order,
// from the informer's one goroutine. The objects are shared with the cache:
// a handler must not modify them (DeepCopy first). A slow handler delays
// every later event.
type Handler[T runtime.Object] interface {
	OnAdd(obj T)
	OnUpdate(old, obj T)
	OnDelete(obj T)
}

// HandlerFuncs adapts functions to a Handler; nil functions are skipped.
type HandlerFuncs[T runtime.Object] struct {
	AddFunc    func(obj T)
	UpdateFunc func(old, obj T)
	DeleteFunc func(obj T)
}

var _ Handler[runtime.Object] = HandlerFuncs[runtime.Object]{}

// OnAdd calls AddFunc.
func (h HandlerFuncs[T]) OnAdd(obj T) {
	if h.AddFunc != nil {
		h.AddFunc(obj)
	}
}

// OnUpdate calls UpdateFunc.
func (h HandlerFuncs[T]) OnUpdate(old, obj T) {
	if h.UpdateFunc != nil {
		h.UpdateFunc(old, obj)
	}
}

// OnDelete calls DeleteFunc.
func (h HandlerFuncs[T]) OnDelete(obj T) {
	if h.DeleteFunc != nil {
		h.DeleteFunc(obj)
	}
}

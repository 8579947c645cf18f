package informer

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// MetadataView shows a typed informer's objects as metadata only
// (*metav1.PartialObjectMetadata), for controllers that look at any kind
// of object, such as the garbage collector, so that they share the
// process's typed cache of a resource instead of following the bus with a
// cache of their own. The metadata it returns shares its maps and slices
// with the cached object: like everything the cache returns, it is
// read-only. It does not run the informer: whoever owns it does.
type MetadataView[T runtime.Object] struct {
	inf *Informer[T]
}

// Metadata returns a metadata view of i.
func Metadata[T runtime.Object](i *Informer[T]) *MetadataView[T] { return &MetadataView[T]{inf: i} }

// asMetadata is obj's metadata, sharing obj's fields.
func asMetadata(obj runtime.Object) *metav1.PartialObjectMetadata {
	a, ok := obj.(metav1.ObjectMetaAccessor)
	if !ok {
		return nil
	}
	om, ok := a.GetObjectMeta().(*metav1.ObjectMeta)
	if !ok {
		return nil
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}, ObjectMeta: *om}
}

// Get returns an object's metadata by namespace and name.
func (v *MetadataView[T]) Get(namespace, name string) (*metav1.PartialObjectMetadata, bool) {
	obj, ok := v.inf.Get(namespace, name)
	if !ok {
		return nil, false
	}
	m := asMetadata(obj)
	return m, m != nil
}

// ListNamespace returns the metadata of one namespace's objects.
func (v *MetadataView[T]) ListNamespace(ns string) []*metav1.PartialObjectMetadata {
	objs := v.inf.ListNamespace(ns)
	out := make([]*metav1.PartialObjectMetadata, 0, len(objs))
	for _, o := range objs {
		if m := asMetadata(o); m != nil {
			out = append(out, m)
		}
	}
	return out
}

// AddHandler adds a handler told about every change as metadata; call it
// before the informer runs.
func (v *MetadataView[T]) AddHandler(h Handler[*metav1.PartialObjectMetadata]) {
	v.inf.AddHandler(HandlerFuncs[T]{
		AddFunc:    func(obj T) { h.OnAdd(asMetadata(obj)) },
		UpdateFunc: func(old, obj T) { h.OnUpdate(asMetadata(old), asMetadata(obj)) },
		DeleteFunc: func(obj T) { h.OnDelete(asMetadata(obj)) },
	})
}

// HasSynced reports whether the underlying informer has synced.
func (v *MetadataView[T]) HasSynced() bool { return v.inf.HasSynced() }

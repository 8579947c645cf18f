package claim

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// PatchOwners sends OwnerPatch(obj, refs) through patch (a JSON merge
// patch of obj); an object that is gone needs nothing.
func PatchOwners(ctx context.Context, obj metav1.Object, refs []metav1.OwnerReference, patch func(ctx context.Context, namespace, name string, patch []byte) error) error {
	b, err := OwnerPatch(obj, refs)
	if err != nil {
		return err
	}
	if err := patch(ctx, obj.GetNamespace(), obj.GetName(), b); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// Resolve returns the cached owner a controller reference names (get reads
// the cache), or the zero T when the reference is not to kind or not to
// this incarnation of the owner (its UID differs).
func Resolve[T Object](ref *metav1.OwnerReference, kind, namespace string, get func(namespace, name string) (T, bool)) T {
	var zero T
	if ref.Kind != kind {
		return zero
	}
	o, ok := get(namespace, ref.Name)
	if !ok || o.GetUID() != ref.UID {
		return zero
	}
	return o
}

// ControllerOf returns the cached owner controlling obj (see Resolve), or
// the zero T when obj has no controller or it is not a cached kind.
func ControllerOf[T Object](obj metav1.Object, kind string, get func(namespace, name string) (T, bool)) T {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil {
		var zero T
		return zero
	}
	return Resolve(ref, kind, obj.GetNamespace(), get)
}

// Selecting returns the owners whose selector (selectorOf) is valid, not
// empty and matches lbls: those that may adopt an orphan with these labels.
func Selecting[T Object](owners []T, selectorOf func(T) *metav1.LabelSelector, lbls map[string]string) []T {
	var out []T
	for _, o := range owners {
		sel, err := metav1.LabelSelectorAsSelector(selectorOf(o))
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(lbls)) {
			continue
		}
		out = append(out, o)
	}
	return out
}

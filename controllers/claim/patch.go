package claim

import (
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// AdoptRefs is obj's owner references with owner (of kind ownerKind) added
// as controller; obj is not changed.
func AdoptRefs(owner metav1.Object, ownerKind schema.GroupVersionKind, obj metav1.Object) []metav1.OwnerReference {
	return append(slices.Clone(obj.GetOwnerReferences()), *metav1.NewControllerRef(owner, ownerKind))
}

// ReleaseRefs is obj's owner references without owner: never nil, so that
// a patch releasing the last owner sends an empty list; obj is not changed.
func ReleaseRefs(owner metav1.Object, obj metav1.Object) []metav1.OwnerReference {
	refs := slices.DeleteFunc(slices.Clone(obj.GetOwnerReferences()), func(r metav1.OwnerReference) bool { return r.UID == owner.GetUID() })
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	return refs
}

// MergePatch is the JSON merge patch that sets an object's owner
// references, pinned to the version the decision was made on: if the
// object changed since, the patch conflicts and the sync runs again on
// fresh state.
type MergePatch struct {
	Metadata PatchMeta `json:"metadata"`
}

// PatchMeta is the metadata of a MergePatch.
type PatchMeta struct {
	UID             types.UID               `json:"uid"`
	ResourceVersion string                  `json:"resourceVersion"`
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
}

// OwnerPatch encodes the MergePatch setting obj's owner references to refs
// (nil sends an empty list).
func OwnerPatch(obj metav1.Object, refs []metav1.OwnerReference) ([]byte, error) {
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	b, err := json.Marshal(MergePatch{Metadata: PatchMeta{UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion(), OwnerReferences: refs}})
	if err != nil {
		return nil, fmt.Errorf("encoding the owner patch of %s: %w", obj.GetName(), err)
	}
	return b, nil
}

// AdoptPatch is OwnerPatch with AdoptRefs.
func AdoptPatch(owner metav1.Object, ownerKind schema.GroupVersionKind, obj metav1.Object) ([]byte, error) {
	return OwnerPatch(obj, AdoptRefs(owner, ownerKind, obj))
}

// ReleasePatch is OwnerPatch with ReleaseRefs.
func ReleasePatch(owner metav1.Object, obj metav1.Object) ([]byte, error) {
	return OwnerPatch(obj, ReleaseRefs(owner, obj))
}

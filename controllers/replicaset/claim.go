package replicaset

import (
	"encoding/json"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// claims sorts the candidate pods of a ReplicaSet (those it controls and
// the orphans its selector matches) into the ones it keeps, the orphans it
// adopts and the pods it controls but no longer selects, which it releases.
type claims struct {
	owned, adopt, release []*corev1.Pod
}

// planClaims decides ownership as upstream's controller-ref manager does: a
// pod controlled by someone else is never touched; a ReplicaSet being
// deleted neither adopts nor releases; a pod being deleted is not adopted.
func planClaims(rs *appsv1.ReplicaSet, sel labels.Selector, candidates []*corev1.Pod) claims {
	var c claims
	deleting := rs.DeletionTimestamp != nil
	for _, p := range candidates {
		if p.Namespace != rs.Namespace {
			continue
		}
		matches := !sel.Empty() && sel.Matches(labels.Set(p.Labels))
		ref := metav1.GetControllerOfNoCopy(p)
		switch {
		case ref != nil && ref.UID != rs.UID:
			// Someone else's.
		case ref != nil && matches:
			c.owned = append(c.owned, p)
		case ref != nil:
			if !deleting {
				c.release = append(c.release, p)
			}
		case matches && !deleting && p.DeletionTimestamp == nil:
			c.adopt = append(c.adopt, p)
		}
	}
	return c
}

// mergePatch is the JSON merge patch that sets a pod's owner references,
// pinned to the version the decision was made on: if the pod changed since,
// the patch conflicts and the sync runs again on fresh state.
type mergePatch struct {
	Metadata patchMeta `json:"metadata"`
}

type patchMeta struct {
	UID             types.UID               `json:"uid"`
	ResourceVersion string                  `json:"resourceVersion"`
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
}

// adoptPatch adds rs as p's controller.
func adoptPatch(rs *appsv1.ReplicaSet, p *corev1.Pod) ([]byte, error) {
	refs := append(slices.Clone(p.OwnerReferences), *metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet")))
	return ownerPatch(p, refs)
}

// releasePatch removes rs from p's owners.
func releasePatch(rs *appsv1.ReplicaSet, p *corev1.Pod) ([]byte, error) {
	refs := slices.DeleteFunc(slices.Clone(p.OwnerReferences), func(r metav1.OwnerReference) bool { return r.UID == rs.UID })
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	return ownerPatch(p, refs)
}

func ownerPatch(p *corev1.Pod, refs []metav1.OwnerReference) ([]byte, error) {
	b, err := json.Marshal(mergePatch{Metadata: patchMeta{UID: p.UID, ResourceVersion: p.ResourceVersion, OwnerReferences: refs}})
	if err != nil {
		return nil, fmt.Errorf("encoding the owner patch of pod %s: %w", p.Name, err)
	}
	return b, nil
}

package deployment

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// claims sorts the candidate ReplicaSets of a Deployment (those it
// controls and the orphans its selector matches) into the ones it keeps,
// the orphans it adopts and those it controls but no longer selects.
type claims struct {
	owned, adopt, release []*appsv1.ReplicaSet
}

// planClaims decides ownership as upstream's controller-ref manager does: a
// ReplicaSet controlled by someone else is never touched; a Deployment
// being deleted neither adopts nor releases; a ReplicaSet being deleted is
// not adopted.
func planClaims(d *appsv1.Deployment, sel labels.Selector, candidates []*appsv1.ReplicaSet) claims {
	var c claims
	deleting := d.DeletionTimestamp != nil
	for _, rs := range candidates {
		if rs.Namespace != d.Namespace {
			continue
		}
		matches := !sel.Empty() && sel.Matches(labels.Set(rs.Labels))
		ref := metav1.GetControllerOf(rs)
		switch {
		case ref != nil && ref.UID != d.UID:
		case ref != nil && matches:
			c.owned = append(c.owned, rs)
		case ref != nil:
			if !deleting {
				c.release = append(c.release, rs)
			}
		case matches && !deleting && rs.DeletionTimestamp == nil:
			c.adopt = append(c.adopt, rs)
		}
	}
	return c
}

// ownerPatch is a JSON merge patch setting rs's owner references, pinned to
// the version the decision was made on: if rs changed since, the patch
// conflicts and the sync runs again on fresh state.
func ownerPatch(rs *appsv1.ReplicaSet, refs []metav1.OwnerReference) ([]byte, error) {
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": rs.UID, "resourceVersion": rs.ResourceVersion, "ownerReferences": refs,
	}})
	if err != nil {
		return nil, fmt.Errorf("encoding the owner patch of replicaset %s: %w", rs.Name, err)
	}
	return b, nil
}

func adoptPatch(d *appsv1.Deployment, rs *appsv1.ReplicaSet) ([]byte, error) {
	refs := append(slices.Clone(rs.OwnerReferences), *metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment")))
	return ownerPatch(rs, refs)
}

func releasePatch(d *appsv1.Deployment, rs *appsv1.ReplicaSet) ([]byte, error) {
	return ownerPatch(rs, slices.DeleteFunc(slices.Clone(rs.OwnerReferences), func(r metav1.OwnerReference) bool { return r.UID == d.UID }))
}

// revisionPatch sets the Deployment's revision annotation, pinned to its version.
func revisionPatch(d *appsv1.Deployment, rev string) ([]byte, error) {
	return json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": d.ResourceVersion, "annotations": map[string]string{RevisionAnnotation: rev},
	}})
}

// cleanupCandidates are the old ReplicaSets beyond revisionHistoryLimit that
// may be deleted: lowest revisions first, and only those with no replicas
// whose controller has seen that.
func cleanupCandidates(d *appsv1.Deployment, old []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	if d.Spec.RevisionHistoryLimit == nil {
		return nil
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range old {
		if rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	diff := len(alive) - int(*d.Spec.RevisionHistoryLimit)
	if diff <= 0 {
		return nil
	}
	slices.SortFunc(alive, func(a, b *appsv1.ReplicaSet) int {
		if c := cmp.Compare(revision(a), revision(b)); c != 0 {
			return c
		}
		return olderFirst(a, b)
	})
	var out []*appsv1.ReplicaSet
	for _, rs := range alive[:diff] {
		if rs.Status.Replicas != 0 || replicas(rs) != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		out = append(out, rs)
	}
	return out
}

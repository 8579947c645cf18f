package deployment

import (
	"cmp"
	"encoding/json"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
)

// controllerKind is the kind in the owner references the controller writes.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

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

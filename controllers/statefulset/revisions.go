package statefulset

import (
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubebus/kubebus/controllers/history"
)

// The revision bookkeeping of a sync, pure: the revision the current
// template makes, what to do to record it, the set as of a revision, and
// which old revisions to prune.

// newRevision is the revision recording set's template, numbered revision.
// It carries the template's labels (kubectl rollout history lists by the
// set's selector) and the set's annotations (its change-cause).
func newRevision(set *appsv1.StatefulSet, revision int64, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	data, err := history.TemplatePatch(set.Spec.Template)
	if err != nil {
		return nil, err
	}
	rev, err := history.NewControllerRevision(set, kind, set.Spec.Template.Labels, data, revision, collisionCount)
	if err != nil {
		return nil, err
	}
	if len(set.Annotations) > 0 {
		rev.Annotations = maps.Clone(set.Annotations)
	}
	return rev, nil
}

// applyRevision returns set with the template rev records.
func applyRevision(set *appsv1.StatefulSet, rev *appsv1.ControllerRevision) (*appsv1.StatefulSet, error) {
	t, err := history.ApplyTemplatePatch(set.Spec.Template, rev.Data)
	if err != nil {
		return nil, fmt.Errorf("applying revision %s: %w", rev.Name, err)
	}
	out := set.DeepCopy()
	out.Spec.Template = t
	return out, nil
}

// revisionStep says how to get the update revision recorded.
type revisionStep int

const (
	// revisionKeep: the newest revision already records the template.
	revisionKeep revisionStep = iota
	// revisionRenumber: an older revision records it (a rollback):
	// renumber it to be the newest.
	revisionRenumber
	// revisionCreate: no revision records it yet.
	revisionCreate
)

// updateRevisionStep decides, for revs sorted by history.SortControllerRevisions
// and candidate (newRevision of the current template numbered
// NextRevision(revs)), which step records the template, and the existing
// revision involved (for Keep and Renumber).
func updateRevisionStep(revs []*appsv1.ControllerRevision, candidate *appsv1.ControllerRevision) (revisionStep, *appsv1.ControllerRevision) {
	equal := history.FindEqualRevisions(revs, candidate)
	switch {
	case len(equal) == 0:
		return revisionCreate, nil
	case history.EqualRevision(revs[len(revs)-1], equal[len(equal)-1]):
		return revisionKeep, revs[len(revs)-1]
	default:
		return revisionRenumber, equal[len(equal)-1]
	}
}

// prunable returns the revisions to delete to keep set's
// revisionHistoryLimit: the oldest of those neither current, nor the
// update revision, nor the revision of a live pod. revs are sorted.
func prunable(set *appsv1.StatefulSet, revs []*appsv1.ControllerRevision, current, update string, podRevisions []string) []*appsv1.ControllerRevision {
	live := map[string]bool{current: true, update: true}
	for _, r := range podRevisions {
		live[r] = true
	}
	var old []*appsv1.ControllerRevision
	for _, r := range revs {
		if !live[r.Name] {
			old = append(old, r)
		}
	}
	limit := 10
	if set.Spec.RevisionHistoryLimit != nil {
		limit = max(0, int(*set.Spec.RevisionHistoryLimit))
	}
	if len(old) <= limit {
		return nil
	}
	return old[:len(old)-limit]
}

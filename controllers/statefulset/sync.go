package statefulset

import (
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/controllers/claim"
	"github.com/kubebus/kubebus/controllers/history"
)

// Reconcile syncs one StatefulSet: claim its revisions and pods, record
// the update revision, apply the plan, write the status, prune history.
func (r *reconciler) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	set, ok := r.sets.Get(req.Namespace, req.Name)
	if !ok {
		return controllers.Result{}, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return controllers.Result{}, controllers.Terminal(fmt.Errorf("statefulset %s: invalid selector: %w", req, err))
	}
	if sel.Empty() {
		return controllers.Result{}, nil // selects nothing: upstream does nothing either
	}
	revs, err := r.claimRevisions(ctx, set, sel)
	if err != nil {
		return controllers.Result{}, err
	}
	pods, err := r.claimPods(ctx, set, sel)
	if err != nil {
		return controllers.Result{}, err
	}
	history.SortControllerRevisions(revs)
	current, update, revs, collisions, err := r.recordRevision(ctx, set, revs)
	if err != nil {
		return controllers.Result{}, err
	}
	currentSet, err := applyRevision(set, current)
	if err != nil {
		return controllers.Result{}, controllers.Terminal(err)
	}
	updateSet, err := applyRevision(set, update)
	if err != nil {
		return controllers.Result{}, controllers.Terminal(err)
	}
	pl := makePlan(state{
		set: set, current: current.Name, update: update.Name, currentSet: currentSet, updateSet: updateSet,
		pods: pods, claims: r.claimsOf(set, pods), now: r.now(),
	})
	execErr := r.execute(ctx, set, pl)
	st := pl.status
	st.CollisionCount = &collisions
	if err := r.updateStatus(ctx, set, st); err != nil {
		return controllers.Result{}, errors.Join(execErr, err)
	}
	if execErr != nil {
		return controllers.Result{}, execErr
	}
	if err := r.prune(ctx, set, revs, st.CurrentRevision, st.UpdateRevision, pods); err != nil {
		return controllers.Result{}, err
	}
	return controllers.Result{RequeueAfter: pl.requeueAfter}, nil
}

// recordRevision makes sure a revision records the set's template (the
// update revision) and finds the current one. It returns revs with any
// revision it created or renumbered, sorted, and the collision count.
func (r *reconciler) recordRevision(ctx context.Context, set *appsv1.StatefulSet, revs []*appsv1.ControllerRevision) (
	current, update *appsv1.ControllerRevision, out []*appsv1.ControllerRevision, collisions int32, err error) {
	if set.Status.CollisionCount != nil {
		collisions = *set.Status.CollisionCount
	}
	candidate, err := newRevision(set, history.NextRevision(revs), &collisions)
	if err != nil {
		return nil, nil, nil, 0, controllers.Terminal(err)
	}
	step, existing := updateRevisionStep(revs, candidate)
	switch step {
	case revisionKeep:
		update = existing
	case revisionRenumber:
		if update, err = history.UpdateRevision(ctx, r.hist, existing, candidate.Revision); err != nil {
			return nil, nil, nil, 0, err
		}
		revs = slices.DeleteFunc(slices.Clone(revs), func(c *appsv1.ControllerRevision) bool { return c.Name == update.Name })
		revs = append(revs, update)
	case revisionCreate:
		if update, err = history.CreateControllerRevision(ctx, r.hist, set, candidate, &collisions); err != nil {
			return nil, nil, nil, 0, err
		}
		if !slices.ContainsFunc(revs, func(c *appsv1.ControllerRevision) bool { return c.Name == update.Name }) {
			revs = append(slices.Clone(revs), update)
		}
	}
	history.SortControllerRevisions(revs)
	current = update
	for _, c := range revs {
		if c.Name == set.Status.CurrentRevision {
			current = c
			break
		}
	}
	return current, update, revs, collisions, nil
}

// claimsOf returns the existing claims of every ordinal in range and of the
// pods above it.
func (r *reconciler) claimsOf(set *appsv1.StatefulSet, pods []*corev1.Pod) map[string]*corev1.PersistentVolumeClaim {
	out := map[string]*corev1.PersistentVolumeClaim{}
	if len(set.Spec.VolumeClaimTemplates) == 0 {
		return out
	}
	look := func(ordinal int) {
		for _, c := range claimsFor(set, ordinal) {
			if have, ok := r.claims.Get(set.Namespace, c.Name); ok {
				out[c.Name] = have
			}
		}
	}
	start := startOrdinal(set)
	for o := start; o < start+replicaCount(set); o++ {
		look(o)
	}
	for _, p := range pods {
		if !inRange(set, p) {
			look(ordinalOf(p))
		}
	}
	return out
}

// updateStatus writes st when it differs from the set's status (the
// conditions, which this controller does not manage, are kept).
func (r *reconciler) updateStatus(ctx context.Context, set *appsv1.StatefulSet, st appsv1.StatefulSetStatus) error {
	st.Conditions = set.Status.Conditions
	if apiequality.Semantic.DeepEqual(set.Status, st) {
		return nil
	}
	cp := set.DeepCopy()
	cp.Status = st
	if _, err := r.client.AppsV1().StatefulSets(set.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating the status of statefulset %s/%s: %w", set.Namespace, set.Name, err)
	}
	return nil
}

// prune deletes the revisions beyond revisionHistoryLimit that no pod runs.
func (r *reconciler) prune(ctx context.Context, set *appsv1.StatefulSet, revs []*appsv1.ControllerRevision, current, update string, pods []*corev1.Pod) error {
	podRevs := make([]string, 0, len(pods))
	for _, p := range pods {
		podRevs = append(podRevs, podRevision(p))
	}
	var errs []error
	for _, c := range prunable(set, revs, current, update, podRevs) {
		if err := r.hist.Delete(ctx, c.Namespace, c.Name); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("pruning ControllerRevision %s/%s: %w", c.Namespace, c.Name, err))
		}
	}
	return errors.Join(errs...)
}

// claimPods returns the pods set controls after adopting the orphans it
// selects (whose names make them its members) and releasing those it no
// longer selects, as package claim decides. Unlike the other controllers,
// a set that may not adopt releases nothing either.
func (r *reconciler) claimPods(ctx context.Context, set *appsv1.StatefulSet, sel labels.Selector) ([]*corev1.Pod, error) {
	var candidates []*corev1.Pod
	for _, p := range r.pods.ByIndex(cache.ByOwnerUID, string(set.UID)) {
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.UID == set.UID {
			candidates = append(candidates, p)
		}
	}
	if set.DeletionTimestamp == nil {
		for _, p := range r.pods.ByIndex(cache.ByOrphanNamespace, set.Namespace) {
			if metav1.GetControllerOfNoCopy(p) == nil {
				candidates = append(candidates, p)
			}
		}
	}
	plan := claim.Sort(set, func(p *corev1.Pod) bool { return sel.Matches(labels.Set(p.Labels)) && isMemberOf(set, p) }, candidates)
	owned := plan.Owned
	var errs []error
	if len(plan.Adopt) > 0 {
		if err := r.canAdopt(ctx, set); err != nil {
			return owned, err
		}
		for _, p := range plan.Adopt {
			if err := r.patchPodOwners(ctx, p, claim.AdoptRefs(set, kind, p)); err != nil {
				errs = append(errs, fmt.Errorf("adopting pod %s/%s: %w", p.Namespace, p.Name, err))
				continue
			}
			owned = append(owned, p)
		}
	}
	for _, p := range plan.Release {
		if err := r.patchPodOwners(ctx, p, claim.ReleaseRefs(set, p)); err != nil {
			errs = append(errs, fmt.Errorf("releasing pod %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	return owned, errors.Join(errs...)
}

// claimRevisions does for revisions what claimPods does for pods.
func (r *reconciler) claimRevisions(ctx context.Context, set *appsv1.StatefulSet, sel labels.Selector) ([]*appsv1.ControllerRevision, error) {
	var owned []*appsv1.ControllerRevision
	var errs []error
	for _, c := range r.revs.ByIndex(cache.ByOwnerUID, string(set.UID)) {
		ref := metav1.GetControllerOfNoCopy(c)
		if c.Namespace != set.Namespace || ref == nil || ref.UID != set.UID {
			continue
		}
		if sel.Matches(labels.Set(c.Labels)) {
			owned = append(owned, c)
		} else if set.DeletionTimestamp == nil {
			if err := history.Release(ctx, r.hist, set, c); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if set.DeletionTimestamp != nil {
		return owned, errors.Join(errs...)
	}
	var adopt []*appsv1.ControllerRevision
	for _, c := range r.revs.ListNamespace(set.Namespace) {
		if c.DeletionTimestamp == nil && metav1.GetControllerOfNoCopy(c) == nil && sel.Matches(labels.Set(c.Labels)) {
			adopt = append(adopt, c)
		}
	}
	if len(adopt) > 0 {
		if err := r.canAdopt(ctx, set); err != nil {
			return owned, err
		}
		for _, c := range adopt {
			got, err := history.Adopt(ctx, r.hist, set, kind, c)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			owned = append(owned, got)
		}
	}
	return owned, errors.Join(errs...)
}

// canAdopt reads set from the API server: a set that is gone, replaced or
// being deleted must not adopt (the cache may lag).
func (r *reconciler) canAdopt(ctx context.Context, set *appsv1.StatefulSet) error {
	return claim.CanAdopt(ctx, "statefulset", set, func(ctx context.Context, namespace, name string) (*appsv1.StatefulSet, error) {
		return r.client.AppsV1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
	})
}

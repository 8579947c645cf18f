package deployment

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/controllers/claim"
)

// Reconcile syncs one Deployment: claim its ReplicaSets, then, unless it is
// being deleted, paused or scaled, take one step of its strategy and write
// its status.
func (r *reconciler) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	cached, ok := r.deps.Get(req.Namespace, req.Name)
	if !ok {
		return controllers.Result{}, nil
	}
	s := &syncer{reconciler: r, d: cached.DeepCopy(), now: r.now()}
	sel, err := metav1.LabelSelectorAsSelector(s.d.Spec.Selector)
	if err != nil {
		return controllers.Result{}, controllers.Terminal(fmt.Errorf("deployment %s: invalid selector: %w", req, err))
	}
	if sel.Empty() {
		r.rec.Eventf(s.d, corev1.EventTypeWarning, ReasonSelectingAll, "This deployment is selecting all pods. A non-empty selector is required.")
		if s.d.Status.ObservedGeneration < s.d.Generation {
			s.d.Status.ObservedGeneration = s.d.Generation
			return controllers.Result{}, s.updateStatus(ctx)
		}
		return controllers.Result{}, nil
	}
	if s.rss, err = s.claimReplicaSets(ctx, sel); err != nil {
		return controllers.Result{}, err
	}
	if s.d.DeletionTimestamp != nil {
		return s.syncStatusOnly(ctx)
	}
	if pausedCondition(s.d, &s.d.Status, s.now) {
		if err := s.updateStatus(ctx); err != nil {
			return controllers.Result{}, err
		}
	}
	if s.d.Spec.Paused {
		return s.syncScale(ctx)
	}
	newRS, old, err := s.newAndOld(ctx, false)
	if err != nil {
		return controllers.Result{}, err
	}
	if isScalingEvent(s.d, newRS, old) {
		return s.syncScale(ctx)
	}
	if isRolling(s.d) {
		return s.rolloutRolling(ctx)
	}
	return s.rolloutRecreate(ctx)
}

// syncer is one sync's state: the latest versions of the Deployment and
// its ReplicaSets (the cache's, then whatever the writes returned).
type syncer struct {
	*reconciler
	d   *appsv1.Deployment
	rss []*appsv1.ReplicaSet
	now time.Time
}

// claimReplicaSets returns the ReplicaSets the Deployment controls after
// adopting matching orphans and releasing those it no longer selects.
func (s *syncer) claimReplicaSets(ctx context.Context, sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
	seen := map[types.UID]bool{}
	var candidates []*appsv1.ReplicaSet
	add := func(rs *appsv1.ReplicaSet) {
		if rs.Namespace == s.d.Namespace && !seen[rs.UID] {
			seen[rs.UID] = true
			candidates = append(candidates, rs)
		}
	}
	for _, rs := range s.rsets.ByIndex(cache.ByOwnerUID, string(s.d.UID)) {
		add(rs)
	}
	for _, rs := range s.rsets.ByLabels(sel) {
		if metav1.GetControllerOf(rs) == nil {
			add(rs)
		}
	}
	plan := claim.Sort(s.d, claim.Selects[*appsv1.ReplicaSet](sel), candidates)
	return claim.Apply(ctx, plan, claim.Writes[*appsv1.ReplicaSet]{
		Kind: "replicaset",
		CanAdopt: func(ctx context.Context) error {
			return claim.CanAdopt(ctx, "deployment", s.d, s.w.deps.Get)
		},
		Adopt: func(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
			return s.patchOwners(ctx, rs, claim.AdoptRefs(s.d, controllerKind, rs))
		},
		Release: func(ctx context.Context, rs *appsv1.ReplicaSet) error {
			_, err := s.patchOwners(ctx, rs, claim.ReleaseRefs(s.d, rs))
			return err
		},
	})
}

// patchOwners sets rs's owner references and returns the stored
// ReplicaSet, or nil when it is gone.
func (s *syncer) patchOwners(ctx context.Context, rs *appsv1.ReplicaSet, refs []metav1.OwnerReference) (*appsv1.ReplicaSet, error) {
	patch, err := claim.OwnerPatch(rs, refs)
	if err != nil {
		return nil, err
	}
	got, err := s.w.rsets.Patch(ctx, rs.Namespace, rs.Name, patch)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return got, err
}

// newAndOld returns the new ReplicaSet (creating it when create is set and
// there is none) with its revision, annotations and the Deployment's
// revision brought up to date, and the old ones.
func (s *syncer) newAndOld(ctx context.Context, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	newRS, old := splitReplicaSets(s.d, s.rss)
	rev := maxRevision(old) + 1
	var err error
	switch {
	case newRS != nil:
		newRS, err = s.syncNewRS(ctx, newRS, rev)
	case create:
		newRS, err = s.createNewRS(ctx, old, rev)
	}
	return newRS, old, err
}

// syncNewRS updates an existing new ReplicaSet's revision, annotations and
// minReadySeconds, and the Deployment's revision.
func (s *syncer) syncNewRS(ctx context.Context, rs *appsv1.ReplicaSet, rev int64) (*appsv1.ReplicaSet, error) {
	cp := rs.DeepCopy()
	changed := setNewRSAnnotations(s.d, cp, rev, true)
	if cp.Spec.MinReadySeconds != s.d.Spec.MinReadySeconds {
		cp.Spec.MinReadySeconds = s.d.Spec.MinReadySeconds
		changed = true
	}
	if changed {
		updated, err := s.w.rsets.Update(ctx, cp)
		if err != nil {
			return nil, fmt.Errorf("updating the new replicaset %s: %w", rs.Name, err)
		}
		s.replace(updated)
		rs = updated
	}
	if err := s.syncRevision(ctx, rs); err != nil {
		return nil, err
	}
	if hasProgressDeadline(s.d) && getCondition(s.d.Status, appsv1.DeploymentProgressing) == nil {
		setCondition(&s.d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonFoundNewRS,
			fmt.Sprintf("Found new replica set %q", rs.Name), s.now))
		if err := s.updateStatus(ctx); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// createNewRS creates the new ReplicaSet, sized as the strategy allows.
func (s *syncer) createNewRS(ctx context.Context, old []*appsv1.ReplicaSet, rev int64) (*appsv1.ReplicaSet, error) {
	rs := newReplicaSet(s.d, rev)
	n := newRSTarget(s.d, withNew(old, rs), rs)
	rs.Spec.Replicas = &n
	created, err := s.w.rsets.Create(ctx, rs)
	switch {
	case apierrors.IsAlreadyExists(err):
		got, gerr := s.w.rsets.Get(ctx, rs.Namespace, rs.Name)
		if gerr != nil {
			return nil, fmt.Errorf("reading replicaset %s after a name clash: %w", rs.Name, gerr)
		}
		if ref := metav1.GetControllerOf(got); ref != nil && ref.UID == s.d.UID && equalIgnoreHash(&got.Spec.Template, &s.d.Spec.Template) {
			// Ours: the cache had not shown it yet.
			s.replace(got)
			return s.syncNewRS(ctx, got, rev)
		}
		// Another template has this hash: count a collision so that the
		// next sync picks another name.
		count := int32(1)
		if s.d.Status.CollisionCount != nil {
			count = *s.d.Status.CollisionCount + 1
		}
		s.d.Status.CollisionCount = &count
		if uerr := s.updateStatus(ctx); uerr != nil {
			return nil, uerr
		}
		return nil, fmt.Errorf("replicaset %s exists with another template: hash collision, collisionCount now %d", rs.Name, count)
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
		s.rec.Eventf(s.d, corev1.EventTypeWarning, ReasonFailedRSCreate, "%s", msg)
		var uerr error
		if hasProgressDeadline(s.d) && ctx.Err() == nil {
			setCondition(&s.d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonRSCreateError, msg, s.now))
			uerr = s.updateStatus(ctx)
		}
		return nil, errors.Join(fmt.Errorf("creating replicaset %s: %w", rs.Name, err), uerr)
	}
	s.replace(created)
	if n > 0 {
		s.rec.Eventf(s.d, corev1.EventTypeNormal, ReasonScalingRS, "Scaled up replica set %s from 0 to %d", created.Name, n)
	}
	if err := s.syncRevision(ctx, created); err != nil {
		return nil, err
	}
	if hasProgressDeadline(s.d) {
		setCondition(&s.d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewRSCreated,
			fmt.Sprintf("Created new replica set %q", created.Name), s.now))
		if err := s.updateStatus(ctx); err != nil {
			return nil, err
		}
	}
	return created, nil
}

// syncRevision sets the Deployment's revision annotation to the new
// ReplicaSet's.
func (s *syncer) syncRevision(ctx context.Context, rs *appsv1.ReplicaSet) error {
	rev := rs.Annotations[RevisionAnnotation]
	if rev == "" || s.d.Annotations[RevisionAnnotation] == rev {
		return nil
	}
	patch, err := revisionPatch(s.d, rev)
	if err != nil {
		return err
	}
	updated, err := s.w.deps.Patch(ctx, s.d.Namespace, s.d.Name, patch)
	if err != nil {
		return fmt.Errorf("setting the revision of deployment %s/%s: %w", s.d.Namespace, s.d.Name, err)
	}
	// Keep the status being worked on: the patch did not touch it.
	updated.Status = s.d.Status
	s.d = updated
	return nil
}

// scaleRS sizes a ReplicaSet and records the Deployment's size on it; it
// reports whether the size changed.
func (s *syncer) scaleRS(ctx context.Context, rs *appsv1.ReplicaSet, to int32) (bool, error) {
	want, ceiling := desired(s.d), desired(s.d)+maxSurge(s.d)
	from := replicas(rs)
	if from == to && !replicasAnnotationsNeedUpdate(rs, want, ceiling) {
		return false, nil
	}
	cp := rs.DeepCopy()
	cp.Spec.Replicas = &to
	setReplicasAnnotations(cp, want, ceiling)
	updated, err := s.w.rsets.Update(ctx, cp)
	if err != nil {
		return false, fmt.Errorf("scaling replicaset %s to %d: %w", rs.Name, to, err)
	}
	s.replace(updated)
	if from == to {
		return false, nil
	}
	dir := "up"
	if to < from {
		dir = "down"
	}
	s.rec.Eventf(s.d, corev1.EventTypeNormal, ReasonScalingRS, "Scaled %s replica set %s from %d to %d", dir, rs.Name, from, to)
	s.log.Debug("scaled replicaset", "deployment", s.d.Namespace+"/"+s.d.Name, "replicaset", rs.Name, "from", from, "to", to)
	return true, nil
}

// rolloutRolling takes one step of a RollingUpdate: grow the new
// ReplicaSet, else shrink the old ones, else clean up after a complete
// rollout.
func (s *syncer) rolloutRolling(ctx context.Context) (controllers.Result, error) {
	newRS, old, err := s.newAndOld(ctx, true)
	if err != nil {
		return controllers.Result{}, err
	}
	scaled, err := s.scaleRS(ctx, newRS, newRSTarget(s.d, withNew(old, newRS), newRS))
	if err != nil {
		return controllers.Result{}, err
	}
	if scaled {
		return s.syncRolloutStatus(ctx)
	}
	newRS, old = splitReplicaSets(s.d, s.rss)
	scaledDown := false
	for _, rz := range scaleDownOld(s.d, newRS, old) {
		ok, err := s.scaleRS(ctx, rz.rs, rz.to)
		if err != nil {
			return controllers.Result{}, err
		}
		scaledDown = scaledDown || ok
	}
	if !scaledDown && deploymentComplete(s.d, &s.d.Status) {
		if err := s.cleanup(ctx); err != nil {
			return controllers.Result{}, err
		}
	}
	return s.syncRolloutStatus(ctx)
}

// rolloutRecreate takes one step of a Recreate: scale the old ReplicaSets
// to zero, wait until their pods are gone, then create and grow the new one.
func (s *syncer) rolloutRecreate(ctx context.Context) (controllers.Result, error) {
	newRS, old, err := s.newAndOld(ctx, false)
	if err != nil {
		return controllers.Result{}, err
	}
	scaledDown := false
	for _, rs := range activeReplicaSets(old) {
		ok, err := s.scaleRS(ctx, rs, 0)
		if err != nil {
			return controllers.Result{}, err
		}
		scaledDown = scaledDown || ok
	}
	if scaledDown || s.oldPodsRunning(newRS, old) {
		return s.syncRolloutStatus(ctx)
	}
	if newRS == nil {
		if newRS, old, err = s.newAndOld(ctx, true); err != nil {
			return controllers.Result{}, err
		}
	}
	if _, err := s.scaleRS(ctx, newRS, newRSTarget(s.d, withNew(old, newRS), newRS)); err != nil {
		return controllers.Result{}, err
	}
	if deploymentComplete(s.d, &s.d.Status) {
		if err := s.cleanup(ctx); err != nil {
			return controllers.Result{}, err
		}
	}
	return s.syncRolloutStatus(ctx)
}

// oldPodsRunning reports whether any pod of an old ReplicaSet has not
// finished (or is still being deleted).
func (s *syncer) oldPodsRunning(newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) bool {
	if sumStatus(old, func(st appsv1.ReplicaSetStatus) int32 { return st.Replicas }) > 0 {
		return true
	}
	for _, rs := range old {
		if newRS != nil && rs.UID == newRS.UID {
			continue
		}
		for _, p := range s.pods.ByIndex(cache.ByOwnerUID, string(rs.UID)) {
			if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != rs.UID {
				continue
			}
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				return true
			}
		}
	}
	return false
}

// syncScale sizes the ReplicaSets for spec.replicas without rolling out
// (a scaling event, or a paused Deployment), then writes the status.
func (s *syncer) syncScale(ctx context.Context) (controllers.Result, error) {
	newRS, old, err := s.newAndOld(ctx, false)
	if err != nil {
		return controllers.Result{}, err
	}
	for _, rz := range planScale(s.d, newRS, old) {
		if _, err := s.scaleRS(ctx, rz.rs, rz.to); err != nil {
			return controllers.Result{}, err
		}
	}
	if s.d.Spec.Paused {
		if err := s.cleanup(ctx); err != nil {
			return controllers.Result{}, err
		}
	}
	return controllers.Result{}, s.syncStatus(ctx)
}

// syncStatusOnly writes the status of a Deployment being deleted.
func (s *syncer) syncStatusOnly(ctx context.Context) (controllers.Result, error) {
	if _, _, err := s.newAndOld(ctx, false); err != nil {
		return controllers.Result{}, err
	}
	return controllers.Result{}, s.syncStatus(ctx)
}

func (s *syncer) syncStatus(ctx context.Context) error {
	newRS, old := splitReplicaSets(s.d, s.rss)
	st := calculateStatus(s.d, withNew(old, newRS), newRS, s.now)
	if apiequality.Semantic.DeepEqual(s.d.Status, st) {
		return nil
	}
	s.d.Status = st
	return s.updateStatus(ctx)
}

// syncRolloutStatus writes the status with the rollout's Progressing
// condition and asks to look again when a deadline is due.
func (s *syncer) syncRolloutStatus(ctx context.Context) (controllers.Result, error) {
	newRS, old := splitReplicaSets(s.d, s.rss)
	st, after := rolloutStatus(s.d, withNew(old, newRS), newRS, s.now)
	if !apiequality.Semantic.DeepEqual(s.d.Status, st) {
		s.d.Status = st
		if err := s.updateStatus(ctx); err != nil {
			return controllers.Result{}, err
		}
	}
	return controllers.Result{RequeueAfter: after}, nil
}

// cleanup deletes old ReplicaSets beyond revisionHistoryLimit.
func (s *syncer) cleanup(ctx context.Context) error {
	_, old := splitReplicaSets(s.d, s.rss)
	for _, rs := range cleanupCandidates(s.d, old) {
		if err := s.w.rsets.Delete(ctx, rs.Namespace, rs.Name, rs.UID); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting old replicaset %s: %w", rs.Name, err)
		}
		s.log.Debug("deleted old replicaset", "deployment", s.d.Namespace+"/"+s.d.Name, "replicaset", rs.Name, "revision", revision(rs))
		s.forget(rs)
	}
	return nil
}

func (s *syncer) updateStatus(ctx context.Context) error {
	updated, err := s.w.deps.UpdateStatus(ctx, s.d)
	if err != nil {
		return fmt.Errorf("updating the status of deployment %s/%s: %w", s.d.Namespace, s.d.Name, err)
	}
	s.d = updated
	return nil
}

// replace records the latest version of a ReplicaSet.
func (s *syncer) replace(rs *appsv1.ReplicaSet) {
	for i, cur := range s.rss {
		if cur.UID == rs.UID {
			s.rss[i] = rs
			return
		}
	}
	s.rss = append(s.rss, rs)
}

func (s *syncer) forget(rs *appsv1.ReplicaSet) {
	for i, cur := range s.rss {
		if cur.UID == rs.UID {
			s.rss = append(s.rss[:i], s.rss[i+1:]...)
			return
		}
	}
}

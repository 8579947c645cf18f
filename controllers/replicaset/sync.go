package replicaset

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/controllers/claim"
	"github.com/kubebus/kubebus/controllers/podwrite"
)

// availabilitySlack is added to the wait for a pod to become available, so
// the sync it schedules does not run a hair too early.
const availabilitySlack = 50 * time.Millisecond

// Reconcile syncs one ReplicaSet: claim its pods, create or delete pods when
// no earlier writes are still unobserved, then write its status.
func (r *reconciler) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	key := req.String()
	rs, ok := r.rsets.Get(req.Namespace, req.Name)
	if !ok {
		r.exp.Forget(key)
		return controllers.Result{}, nil
	}
	// Decide before reading the pods: a pod whose creation is observed
	// after this point is in the cache when it is read below.
	satisfied := r.exp.Satisfied(key)
	sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		return controllers.Result{}, controllers.Terminal(fmt.Errorf("replicaset %s: invalid selector: %w", key, err))
	}
	owned, err := r.claimPods(ctx, rs, sel)
	if err != nil {
		return controllers.Result{}, err
	}
	active := activePods(owned)
	var manageErr error
	if satisfied && rs.DeletionTimestamp == nil {
		var gone map[types.UID]bool
		gone, manageErr = r.manage(ctx, rs, active)
		if len(gone) > 0 {
			active = withoutUIDs(active, gone)
		}
	}
	st, next := calculateStatus(rs, active, manageErr, r.now())
	if statusChanged(rs, st) {
		if err := r.updateStatus(ctx, rs, st); err != nil {
			return controllers.Result{}, errors.Join(manageErr, err)
		}
	}
	if manageErr != nil {
		return controllers.Result{}, manageErr
	}
	if next > 0 {
		return controllers.Result{RequeueAfter: next + availabilitySlack}, nil
	}
	return controllers.Result{}, nil
}

// claimPods returns the pods rs controls after adopting matching orphans
// and releasing the pods it no longer selects.
func (r *reconciler) claimPods(ctx context.Context, rs *appsv1.ReplicaSet, sel labels.Selector) ([]*corev1.Pod, error) {
	plan := claim.Sort(rs, claim.Selects[*corev1.Pod](sel), r.candidates(rs, sel))
	return claim.Apply(ctx, plan, claim.Writes[*corev1.Pod]{
		Kind: "pod",
		CanAdopt: func(ctx context.Context) error {
			return claim.CanAdopt(ctx, "replicaset", rs, r.w.rsets.Get)
		},
		Adopt: func(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
			if err := claim.PatchOwners(ctx, p, claim.AdoptRefs(rs, controllerKind, p), r.w.pods.Patch); err != nil {
				return nil, err
			}
			r.log.Debug("adopted pod", "replicaset", rs.Namespace+"/"+rs.Name, "pod", p.Name)
			return p, nil
		},
		Release: func(ctx context.Context, p *corev1.Pod) error {
			if err := claim.PatchOwners(ctx, p, claim.ReleaseRefs(rs, p), r.w.pods.Patch); err != nil {
				return err
			}
			r.log.Debug("released pod", "replicaset", rs.Namespace+"/"+rs.Name, "pod", p.Name)
			return nil
		},
	})
}

// candidates are the pods rs controls and the orphans its selector matches.
func (r *reconciler) candidates(rs *appsv1.ReplicaSet, sel labels.Selector) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range r.pods.ByIndex(cache.ByOwnerUID, string(rs.UID)) {
		if p.Namespace == rs.Namespace {
			out = append(out, p)
		}
	}
	if sel.Empty() {
		return out
	}
	orphans := r.pods.ByIndex(cache.ByOrphanNamespace, rs.Namespace)
	if len(orphans) == 0 {
		return out
	}
	// A pod can be in both: rs among its owners, but not as controller.
	seen := make(map[types.UID]bool, len(out))
	for _, p := range out {
		seen[p.UID] = true
	}
	for _, p := range orphans {
		if !seen[p.UID] && metav1.GetControllerOfNoCopy(p) == nil && sel.Matches(labels.Set(p.Labels)) {
			seen[p.UID] = true
			out = append(out, p)
		}
	}
	return out
}

// manage creates or deletes pods so that active matches spec.replicas. It
// returns the pods it deleted.
func (r *reconciler) manage(ctx context.Context, rs *appsv1.ReplicaSet, active []*corev1.Pod) (map[types.UID]bool, error) {
	diff := replicaDiff(specReplicas(rs), len(active), r.burst)
	switch {
	case diff > 0:
		return nil, r.createPods(ctx, rs, diff)
	case diff < 0:
		return r.deletePods(ctx, rs, podsToDelete(active, -diff))
	}
	return nil, nil
}

// createPods creates n pods in slow-start batches, stopping after a batch
// with a failure. Creations that did not happen are taken off the
// expectations at once; the others wait for the cache to show them.
func (r *reconciler) createPods(ctx context.Context, rs *appsv1.ReplicaSet, n int) error {
	key := controllers.KeyOf(rs).String()
	r.exp.ExpectCreations(key, n)
	created, err := podwrite.Creates{
		Create:   func(ctx context.Context, _ int) (*corev1.Pod, error) { return r.w.pods.Create(ctx, newPod(rs)) },
		Recorder: r.rec,
		Object:   rs,
	}.InBatches(ctx, n)
	if missed := n - created; missed > 0 {
		r.exp.CreationsObserved(key, missed)
	}
	if err != nil {
		return fmt.Errorf("creating pods for replicaset %s (%d of %d created): %w", key, created, n, err)
	}
	r.log.Debug("created pods", "replicaset", key, "count", created)
	return nil
}

// deletePods deletes the victims in parallel and returns those that are
// gone (deleted now, or already).
func (r *reconciler) deletePods(ctx context.Context, rs *appsv1.ReplicaSet, victims []*corev1.Pod) (map[types.UID]bool, error) {
	key := controllers.KeyOf(rs).String()
	keys := make([]string, len(victims))
	for i, p := range victims {
		keys[i] = podKey(p)
	}
	r.exp.ExpectDeletions(key, keys)
	gone, err := podwrite.Deletes{
		Delete:   r.w.pods.Delete,
		Recorder: r.rec,
		Object:   rs,
		Unseen:   func(p *corev1.Pod) { r.exp.DeletionObserved(key, podKey(p)) },
	}.All(ctx, victims)
	if err != nil {
		return gone, fmt.Errorf("scaling down replicaset %s: %w", key, err)
	}
	r.log.Debug("deleted pods", "replicaset", key, "count", len(gone))
	return gone, nil
}

func (r *reconciler) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, st appsv1.ReplicaSetStatus) error {
	cp := rs.DeepCopy()
	cp.Status = st
	if _, err := r.w.rsets.UpdateStatus(ctx, cp); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating the status of replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	return nil
}

func withoutUIDs(pods []*corev1.Pod, drop map[types.UID]bool) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if !drop[p.UID] {
			out = append(out, p)
		}
	}
	return out
}

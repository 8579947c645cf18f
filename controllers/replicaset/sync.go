package replicaset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
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
		r.exp.forget(key)
		return controllers.Result{}, nil
	}
	// Decide before reading the pods: a pod whose creation is observed
	// after this point is in the cache when it is read below.
	satisfied := r.exp.satisfied(key)
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
	c := planClaims(rs, sel, r.candidates(rs, sel))
	owned := c.owned
	var errs []error
	if len(c.adopt) > 0 {
		if err := r.canAdopt(ctx, rs); err != nil {
			errs = append(errs, err)
		} else {
			for _, p := range c.adopt {
				if err := r.patchOwners(ctx, rs, p, adoptPatch); err != nil {
					errs = append(errs, fmt.Errorf("adopting pod %s/%s: %w", p.Namespace, p.Name, err))
					continue
				}
				r.log.Debug("adopted pod", "replicaset", rs.Namespace+"/"+rs.Name, "pod", p.Name)
				owned = append(owned, p)
			}
		}
	}
	for _, p := range c.release {
		if err := r.patchOwners(ctx, rs, p, releasePatch); err != nil {
			errs = append(errs, fmt.Errorf("releasing pod %s/%s: %w", p.Namespace, p.Name, err))
			continue
		}
		r.log.Debug("released pod", "replicaset", rs.Namespace+"/"+rs.Name, "pod", p.Name)
	}
	return owned, errors.Join(errs...)
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

// canAdopt reads rs from the API server: a ReplicaSet that is gone,
// replaced or being deleted must not adopt (the cache may lag).
func (r *reconciler) canAdopt(ctx context.Context, rs *appsv1.ReplicaSet) error {
	fresh, err := r.w.rsets.Get(ctx, rs.Namespace, rs.Name)
	if err != nil {
		return fmt.Errorf("checking replicaset %s/%s before adopting: %w", rs.Namespace, rs.Name, err)
	}
	if fresh.UID != rs.UID {
		return fmt.Errorf("replicaset %s/%s was replaced (uid %s, cached %s)", rs.Namespace, rs.Name, fresh.UID, rs.UID)
	}
	if fresh.DeletionTimestamp != nil {
		return fmt.Errorf("replicaset %s/%s is being deleted", rs.Namespace, rs.Name)
	}
	return nil
}

// patchOwners rewrites p's owner references with build (adoptPatch or
// releasePatch); a pod that is gone needs nothing.
func (r *reconciler) patchOwners(ctx context.Context, rs *appsv1.ReplicaSet, p *corev1.Pod, build func(*appsv1.ReplicaSet, *corev1.Pod) ([]byte, error)) error {
	patch, err := build(rs, p)
	if err != nil {
		return err
	}
	if err := r.w.pods.Patch(ctx, p.Namespace, p.Name, patch); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
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
	r.exp.expectCreations(key, n)
	created := 0
	var err error
	for _, size := range batchSizes(n, 1) {
		ok, berr := r.createBatch(ctx, rs, size)
		created += ok
		if berr != nil {
			err = berr
			break
		}
	}
	if missed := n - created; missed > 0 {
		r.exp.creationsObserved(key, missed)
	}
	if err != nil {
		return fmt.Errorf("creating pods for replicaset %s (%d of %d created): %w", key, created, n, err)
	}
	r.log.Debug("created pods", "replicaset", key, "count", created)
	return nil
}

// createBatch creates size pods in parallel and returns how many the API
// server accepted (or may have: a timeout counts, as upstream) and the
// first error.
func (r *reconciler) createBatch(ctx context.Context, rs *appsv1.ReplicaSet, size int) (int, error) {
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		ok       int
		firstErr error
	)
	for range size {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pod, err := r.w.pods.Create(ctx, newPod(rs))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
				r.rec.Eventf(rs, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: %s", pod.Name)
			case apierrors.IsTimeout(err):
				ok++
			default:
				if firstErr == nil {
					firstErr = err
				}
				if ctx.Err() == nil {
					r.rec.Eventf(rs, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	return ok, firstErr
}

// deletePods deletes the victims in parallel and returns those that are
// gone (deleted now, or already).
func (r *reconciler) deletePods(ctx context.Context, rs *appsv1.ReplicaSet, victims []*corev1.Pod) (map[types.UID]bool, error) {
	key := controllers.KeyOf(rs).String()
	keys := make([]string, len(victims))
	for i, p := range victims {
		keys[i] = podKey(p)
	}
	r.exp.expectDeletions(key, keys)
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		gone = map[types.UID]bool{}
		errs []error
	)
	for _, p := range victims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := r.w.pods.Delete(ctx, p.Namespace, p.Name, p.UID)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				gone[p.UID] = true
				r.rec.Eventf(rs, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: %s", p.Name)
			case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
				// Gone already (or replaced by a namesake): its deletion
				// may have been observed before it was expected.
				gone[p.UID] = true
				r.exp.deletionObserved(key, podKey(p))
			default:
				r.exp.deletionObserved(key, podKey(p))
				errs = append(errs, fmt.Errorf("deleting pod %s: %w", p.Name, err))
				if ctx.Err() == nil {
					r.rec.Eventf(rs, corev1.EventTypeWarning, ReasonFailedDelete, "Error deleting: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
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

package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/controllers/claim"
	"github.com/kubebus/kubebus/controllers/podwrite"
)

// Event reasons (upstream's).
const (
	ReasonSuccessfulCreate = podwrite.ReasonSuccessfulCreate
	ReasonFailedCreate     = podwrite.ReasonFailedCreate
	ReasonSuccessfulDelete = podwrite.ReasonSuccessfulDelete
	ReasonFailedDelete     = podwrite.ReasonFailedDelete
	ReasonCompleted        = "Completed"
	ReasonSuspended        = "Suspended"
	ReasonResumed          = "Resumed"
	ReasonTooManySucceeded = "TooManySucceededPods"
)

// staleRetry re-syncs a Job whose cached copy is older than this
// controller's last status write, should no newer copy arrive.
const staleRetry = time.Second

// Reconcile syncs one Job.
func (r *reconciler) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	key := req.String()
	shared, ok := r.jobs.Get(req.Namespace, req.Name)
	if !ok {
		r.forget(key)
		return controllers.Result{}, nil
	}
	if isFinished(shared) {
		r.forget(key)
		r.orphanPodsOf(shared)
		return controllers.Result{}, nil
	}
	if r.stale(key, shared) {
		return controllers.Result{RequeueAfter: staleRetry}, nil
	}
	if m := shared.Spec.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
		r.rec.Event(shared, corev1.EventTypeWarning, "UnknownCompletionMode", "Skipped Job sync because completion mode is unknown")
		return controllers.Result{}, nil
	}
	if m := shared.Spec.ManagedBy; m != nil && *m != batchv1.JobControllerName {
		return controllers.Result{}, nil // another controller's
	}
	j := shared.DeepCopy()
	now := r.now()
	// Decide before reading the pods: a pod observed after this point is
	// in the cache when it is read below.
	satisfied := r.exp.Satisfied(key)
	pods, err := r.claimPods(ctx, j)
	if err != nil {
		return controllers.Result{}, err
	}
	st := newState(j, pods, r.fin.removing(key))
	startTimeSet := false
	if j.Status.StartTime == nil && !suspended(j) {
		t := metav1.NewTime(now)
		j.Status.StartTime = &t
		startTimeSet = true
	}
	r.mu.Lock()
	backoff := nextBackoff(r.backoff[key], st.newSucceeded, st.newFailed)
	r.mu.Unlock()

	var requeue time.Duration
	st.finished, requeue = finishCondition(st, now)
	active := int32(len(st.active))
	var manageErr error
	suspendChanged := false
	if st.finished != nil {
		deleted, deletedReady, err := r.deleteActive(ctx, j, st.active)
		if deleted != active || !satisfied {
			st.finished = nil // pods or finalizers may remain
		}
		active -= deleted
		st.terminating += deleted
		st.ready -= deletedReady
		manageErr = err
	} else {
		managed := false
		if satisfied && j.DeletionTimestamp == nil {
			var retry time.Duration
			active, retry, manageErr = r.manage(ctx, st, backoff.remaining(now, r.base, r.maxBackoff))
			if retry > 0 {
				requeue = minPositive(requeue, max(retry, r.batch))
			}
			managed = true
		}
		switch {
		case isComplete(st, active):
			st.finished = newCondition(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, reasonCompletionsReached, msgCompletionsReached, now)
		case managed && suspended(j):
			j.Status.Conditions, suspendChanged = ensureCondition(j.Status.Conditions, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended", now)
			if suspendChanged {
				r.rec.Event(j, corev1.EventTypeNormal, ReasonSuspended, "Job suspended")
			}
		case managed:
			j.Status.Conditions, suspendChanged = ensureCondition(j.Status.Conditions, batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", now)
			if suspendChanged {
				r.rec.Event(j, corev1.EventTypeNormal, ReasonResumed, "Job resumed")
				// A resumed Job's active deadline counts from now.
				t := metav1.NewTime(now)
				j.Status.StartTime = &t
			}
		}
	}
	flush := suspendChanged || startTimeSet || active != shared.Status.Active ||
		shared.Status.Ready == nil || *shared.Status.Ready != st.ready ||
		shared.Status.Terminating == nil || *shared.Status.Terminating != st.terminating
	j.Status.Active = active
	j.Status.Ready = &st.ready
	j.Status.Terminating = &st.terminating
	if err := r.track(ctx, st, flush, backoff, now); err != nil {
		return controllers.Result{}, errors.Join(manageErr, fmt.Errorf("tracking the status of job %s: %w", key, err))
	}
	if manageErr != nil {
		return controllers.Result{}, manageErr
	}
	return controllers.Result{RequeueAfter: requeue}, nil
}

func minPositive(a, b time.Duration) time.Duration {
	if a <= 0 {
		return b
	}
	if b <= 0 {
		return a
	}
	return min(a, b)
}

// forget drops what is remembered of a Job that is gone or finished.
func (r *reconciler) forget(key string) {
	r.exp.Forget(key)
	r.fin.forget(key)
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.backoff, key)
	delete(r.written, key)
}

// stale reports whether the cached Job predates this controller's last
// status write to it (the bus has not delivered that write yet).
func (r *reconciler) stale(key string, j *batchv1.Job) bool {
	rv, err := strconv.ParseInt(j.ResourceVersion, 10, 64)
	if err != nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return rv < r.written[key]
}

// writeStatus writes the status of st.job, replacing st.job with the
// stored Job (whose resourceVersion the next write needs).
func (r *reconciler) writeStatus(ctx context.Context, st *state) error {
	out, err := r.w.jobs.UpdateStatus(ctx, st.job)
	if err != nil {
		return err
	}
	key := controllers.KeyOf(out).String()
	if rv, err := strconv.ParseInt(out.ResourceVersion, 10, 64); err == nil {
		r.mu.Lock()
		r.written[key] = rv
		r.mu.Unlock()
	}
	st.job.ResourceVersion = out.ResourceVersion
	return nil
}

// track counts finished pods (see track.go), removes their finalizers and
// finishes the Job when its condition is reached and nothing is left.
func (r *reconciler) track(ctx context.Context, st *state, flush bool, backoff backoffRecord, now time.Time) error {
	j := st.job
	key := controllers.KeyOf(j).String()
	old := j.Status.DeepCopy()
	tp := planTracking(st, flush, now)
	if tp.flush {
		if err := r.writeStatus(ctx, st); err != nil {
			return fmt.Errorf("adding uncounted pods to the status: %w", err)
		}
		r.mu.Lock()
		r.backoff[key] = backoff
		r.mu.Unlock()
		tp.flush = false
	}
	var rmErr error
	if len(tp.removeFinalizer) > 0 {
		var removed []types.UID
		removed, rmErr = r.removeFinalizers(ctx, key, tp.removeFinalizer)
		for _, u := range removed {
			delete(tp.withFinalizer, u)
		}
	}
	if cleanUncounted(&j.Status, tp.withFinalizer) {
		tp.flush = true
	}
	if rmErr != nil {
		if tp.flush {
			if err := r.writeStatus(ctx, st); err != nil {
				return errors.Join(rmErr, err)
			}
		}
		return rmErr
	}
	finished := !tp.full && enactFinished(&j.Status, st.finished, st.terminating, now)
	if finished || tp.flush {
		if err := r.writeStatus(ctx, st); err != nil {
			return fmt.Errorf("counting finished pods: %w", err)
		}
	}
	if finished {
		r.recordFinished(j, st.finished)
	}
	if j.Status.Succeeded != old.Succeeded || j.Status.Failed != old.Failed {
		r.log.Debug("counted pods", "job", key, "succeeded", j.Status.Succeeded, "failed", j.Status.Failed)
	}
	return nil
}

func (r *reconciler) recordFinished(j *batchv1.Job, c *batchv1.JobCondition) {
	if c.Type == batchv1.JobComplete {
		if j.Spec.Completions != nil && j.Status.Succeeded > *j.Spec.Completions {
			r.rec.Event(j, corev1.EventTypeWarning, ReasonTooManySucceeded, "Too many succeeded pods running after completion count reached")
		}
		r.rec.Event(j, corev1.EventTypeNormal, ReasonCompleted, "Job completed")
		return
	}
	r.rec.Event(j, corev1.EventTypeWarning, c.Reason, c.Message)
}

// removeFinalizerPatch drops the tracking finalizer, leaving any other.
var removeFinalizerPatch = func() []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer}}})
	return b
}()

// removeFinalizers removes the tracking finalizer from pods in parallel and
// returns the UIDs it is gone from (removed now, or the pod is gone).
func (r *reconciler) removeFinalizers(ctx context.Context, key string, pods []*corev1.Pod) ([]types.UID, error) {
	uids := make([]types.UID, len(pods))
	for i, p := range pods {
		uids[i] = p.UID
	}
	r.fin.expect(key, uids)
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		removed []types.UID
		errs    []error
	)
	sem := make(chan struct{}, 64)
	for _, p := range pods {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := r.w.pods.PatchType(ctx, p.Namespace, p.Name, types.StrategicMergePatchType, removeFinalizerPatch)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				removed = append(removed, p.UID)
			case apierrors.IsNotFound(err):
				r.fin.removed(key, p.UID)
				removed = append(removed, p.UID)
			default:
				r.fin.removed(key, p.UID)
				errs = append(errs, fmt.Errorf("removing the tracking finalizer of pod %s: %w", p.Name, err))
			}
		}()
	}
	wg.Wait()
	return removed, errors.Join(errs...)
}

// deleteActive deletes a finished Job's active pods, keeping their
// finalizers (tracking counts them as failed, then removes them). It
// returns how many (and how many ready) are deleted.
func (r *reconciler) deleteActive(ctx context.Context, j *batchv1.Job, pods []*corev1.Pod) (int32, int32, error) {
	var (
		mu           sync.Mutex
		wg           sync.WaitGroup
		deleted, rdy int32
		errs         []error
	)
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := r.w.pods.Delete(ctx, p.Namespace, p.Name, p.UID)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting pod %s: %w", p.Name, err))
				r.rec.Eventf(j, corev1.EventTypeWarning, ReasonFailedDelete, "Error deleting: %v", err)
				return
			}
			deleted++
			if isReady(p) {
				rdy++
			}
			if err == nil {
				r.rec.Eventf(j, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: %s", p.Name)
			}
		}()
	}
	wg.Wait()
	return deleted, rdy, errors.Join(errs...)
}

// manage applies planManage: deletes pods (finalizer first) or creates
// them in slow-start batches. It returns the active count afterwards and
// the back-off still to wait.
func (r *reconciler) manage(ctx context.Context, st *state, backoff time.Duration) (int32, time.Duration, error) {
	j := st.job
	key := controllers.KeyOf(j).String()
	active := int32(len(st.active))
	plan := planManage(st, backoff)
	if len(plan.remove) > 0 {
		r.exp.ExpectCounts(key, 0, len(plan.remove))
		removed, rdy, err := r.removePods(ctx, j, key, plan.remove)
		st.terminating += removed
		st.ready -= rdy
		return active - removed, 0, err
	}
	if plan.create == 0 {
		return active, plan.retryAfter, nil
	}
	r.exp.ExpectCounts(key, plan.create, 0)
	created, err := podwrite.Creates{
		Create: func(ctx context.Context, i int) (*corev1.Pod, error) {
			index := noIndex
			if plan.indexes != nil {
				index = plan.indexes[i]
			}
			return r.w.pods.Create(ctx, newPod(j, index, plan.failures[index]))
		},
		Recorder: r.rec,
		Object:   j,
		// The namespace is going away: nothing more to do.
		Ignore: func(err error) bool { return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) },
	}.InBatches(ctx, plan.create)
	if missed := plan.create - created; missed > 0 {
		r.exp.CreationsObserved(key, missed)
	}
	if err != nil {
		return active + int32(created), 0, fmt.Errorf("creating pods for job %s (%d of %d created): %w", key, created, plan.create, err)
	}
	return active + int32(created), 0, nil
}

// removePods removes the tracking finalizer from pods, then deletes them;
// it returns how many (and how many ready) are gone.
func (r *reconciler) removePods(ctx context.Context, j *batchv1.Job, key string, pods []*corev1.Pod) (int32, int32, error) {
	var (
		mu           sync.Mutex
		wg           sync.WaitGroup
		removed, rdy int32
		errs         []error
	)
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := error(nil)
			if hasTracking(p) {
				err = r.w.pods.PatchType(ctx, p.Namespace, p.Name, types.StrategicMergePatchType, removeFinalizerPatch)
			}
			if err == nil {
				err = r.w.pods.Delete(ctx, p.Namespace, p.Name, p.UID)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.exp.DeletionsObserved(key, 1)
				if !apierrors.IsNotFound(err) {
					errs = append(errs, fmt.Errorf("deleting pod %s: %w", p.Name, err))
					r.rec.Eventf(j, corev1.EventTypeWarning, ReasonFailedDelete, "Error deleting: %v", err)
					return
				}
			} else {
				r.rec.Eventf(j, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: %s", p.Name)
			}
			removed++
			if isReady(p) {
				rdy++
			}
		}()
	}
	wg.Wait()
	return removed, rdy, errors.Join(errs...)
}

// claimPods returns the pods j controls after adopting matching orphans
// (adding the tracking finalizer) and releasing those it no longer selects
// (package claim decides).
func (r *reconciler) claimPods(ctx context.Context, j *batchv1.Job) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector)
	if err != nil {
		return nil, controllers.Terminal(fmt.Errorf("job %s/%s: invalid selector: %w", j.Namespace, j.Name, err))
	}
	var candidates []*corev1.Pod
	for _, p := range r.pods.ByIndex(cache.ByOwnerUID, string(j.UID)) {
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.UID == j.UID {
			candidates = append(candidates, p)
		}
	}
	if j.DeletionTimestamp == nil && !sel.Empty() {
		for _, p := range r.pods.ByIndex(cache.ByOrphanNamespace, j.Namespace) {
			if metav1.GetControllerOfNoCopy(p) == nil {
				candidates = append(candidates, p)
			}
		}
	}
	patch := func(ctx context.Context, namespace, name string, patch []byte) error {
		return r.w.pods.PatchType(ctx, namespace, name, types.MergePatchType, patch)
	}
	plan := claim.Sort(j, claim.Selects[*corev1.Pod](sel), candidates)
	return claim.Apply(ctx, plan, claim.Writes[*corev1.Pod]{
		Kind: "pod",
		CanAdopt: func(ctx context.Context) error {
			return claim.CanAdopt(ctx, "job", j, r.w.jobs.Get)
		},
		Adopt: func(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
			refs := claim.AdoptRefs(j, controllerKind, p)
			b, err := adoptPatch(p, refs)
			if err == nil {
				err = patch(ctx, p.Namespace, p.Name, b)
			}
			if apierrors.IsNotFound(err) {
				return nil, nil // gone: not j's
			}
			if err != nil {
				return nil, err
			}
			cp := p.DeepCopy()
			cp.OwnerReferences = refs
			if !hasTracking(cp) {
				cp.Finalizers = append(cp.Finalizers, batchv1.JobTrackingFinalizer)
			}
			return cp, nil
		},
		Release: func(ctx context.Context, p *corev1.Pod) error {
			return claim.PatchOwners(ctx, p, claim.ReleaseRefs(j, p), patch)
		},
	})
}

// adoptPatch sets a pod's owner references and, unless it has it, the
// tracking finalizer: a claim.MergePatch with the finalizers added.
func adoptPatch(p *corev1.Pod, refs []metav1.OwnerReference) ([]byte, error) {
	meta := map[string]any{"uid": p.UID, "resourceVersion": p.ResourceVersion, "ownerReferences": refs}
	if !hasTracking(p) {
		meta["finalizers"] = append(slices.Clone(p.Finalizers), batchv1.JobTrackingFinalizer)
	}
	b, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return nil, fmt.Errorf("encoding the owner patch of pod %s: %w", p.Name, err)
	}
	return b, nil
}

// syncOrphan removes the tracking finalizer from a pod no running Job
// tracks: its Job is gone or finished, or it has no Job.
func (r *reconciler) syncOrphan(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	p, ok := r.pods.Get(req.Namespace, req.Name)
	if !ok || !hasTracking(p) {
		return controllers.Result{}, nil
	}
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		if ref.Kind != "Job" || ref.APIVersion != batchv1.SchemeGroupVersion.String() {
			return controllers.Result{}, nil // not a Job's: not ours to touch
		}
		if j := r.resolve(p.Namespace, ref); j != nil && !isFinished(j) {
			return controllers.Result{}, nil // its Job tracks it
		}
	}
	err := r.w.pods.PatchType(ctx, p.Namespace, p.Name, types.StrategicMergePatchType, removeFinalizerPatch)
	if err != nil && !apierrors.IsNotFound(err) {
		return controllers.Result{}, fmt.Errorf("removing the tracking finalizer of orphan pod %s: %w", req, err)
	}
	return controllers.Result{}, nil
}

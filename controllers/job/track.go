package job

import (
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Counting finished pods exactly once, across restarts (upstream's scheme):
//
//  1. a finished pod that still has the tracking finalizer is added to
//     status.uncountedTerminatedPods (an Indexed Job's succeeded pod to
//     status.completedIndexes instead), and the status is written;
//  2. then its finalizer is removed;
//  3. a UID in uncountedTerminatedPods whose pod has no finalizer any more
//     (or is gone) moves into the succeeded or failed counter.
//
// Every status write carries the resourceVersion the sync read, so a sync
// working from a stale Job fails with a conflict instead of counting twice.
// Pods whose finalizer removal the cache does not show yet (expectedRm)
// count as without it.

// trackPlan is step 1's outcome: the pods whose finalizer to remove, and
// whether the status must be written first.
type trackPlan struct {
	removeFinalizer []*corev1.Pod
	// withFinalizer are the UIDs of the pods that still have the finalizer.
	withFinalizer map[types.UID]bool
	flush         bool
	// full: the uncounted lists reached their cap; the Job may not finish
	// in this sync.
	full bool
}

// planTracking records the newly finished pods in st.job's status (step 1)
// and lists the finalizers to remove. flush says the status already
// differs from the stored one. It also moves UIDs whose pods lost their
// finalizer into the counters (step 3), adds the interim FailureTarget or
// SuccessCriteriaMet condition, and turns st.finished into the terminal
// condition to set once nothing is left uncounted.
func planTracking(st *state, flush bool, now time.Time) trackPlan {
	j := st.job
	status := &j.Status
	indexed := isIndexed(j)
	pods := st.pods
	if indexed {
		pods = slices.Clone(pods)
		slices.SortStableFunc(pods, func(a, b *corev1.Pod) int { return completionIndex(a) - completionIndex(b) })
	}
	tp := trackPlan{withFinalizer: map[types.UID]bool{}}
	for _, p := range pods {
		if hasTracking(p) && !st.expectedRm[p.UID] {
			tp.withFinalizer[p.UID] = true
		}
	}
	if cleanUncounted(status, tp.withFinalizer) {
		flush = true
	}
	uncounted := status.UncountedTerminatedPods
	terminal := st.finished != nil && st.finished.Type != batchv1.JobSuccessCriteriaMet && st.finished.Type != batchv1.JobComplete
	var newIdx []int
	for _, p := range pods {
		if !hasTracking(p) || st.expectedRm[p.UID] {
			continue // counted in an earlier sync
		}
		failed := isFailed(p, j)
		if !(j.DeletionTimestamp != nil || st.finished != nil || p.Status.Phase == corev1.PodSucceeded || failed) {
			continue // still running: keep tracking
		}
		tp.removeFinalizer = append(tp.removeFinalizer, p)
		switch {
		case p.Status.Phase == corev1.PodSucceeded && !st.uncounted.failed[p.UID]:
			if indexed {
				if ix := validIndex(p, completions(j)); ix != noIndex && !st.prevSucceededIdx[ix] {
					newIdx = append(newIdx, ix)
					flush = true
				}
			} else if !st.uncounted.succeeded[p.UID] {
				uncounted.Succeeded = append(uncounted.Succeeded, p.UID)
				flush = true
			}
		case failed || terminal:
			// Once the Job failed, every pod not finished counts as failed.
			if st.uncounted.failed[p.UID] || (indexed && validIndex(p, completions(j)) == noIndex) {
				break
			}
			if matchFailurePolicy(j.Spec.PodFailurePolicy, p).counts() {
				uncounted.Failed = append(uncounted.Failed, p.UID)
				flush = true
			}
		}
		if len(newIdx)+len(uncounted.Succeeded)+len(uncounted.Failed) >= maxUncounted {
			tp.full = true
			break
		}
	}
	if indexed {
		for _, ix := range newIdx {
			st.succeededIdx[ix] = true
		}
		s := st.succeededIdx.String()
		if s != status.CompletedIndexes {
			flush = true
		}
		status.CompletedIndexes = s
		status.Succeeded = int32(len(st.succeededIdx))
		if st.failedIdx != nil {
			f := st.failedIdx.String()
			if status.FailedIndexes == nil || *status.FailedIndexes != f {
				status.FailedIndexes = &f
				flush = true
			}
		}
	}
	if c := st.finished; c != nil {
		switch c.Type {
		case batchv1.JobFailureTarget:
			status.Conditions = append(status.Conditions, *c)
			flush = true
			st.finished = newCondition(batchv1.JobFailed, corev1.ConditionTrue, c.Reason, c.Message, now)
		case batchv1.JobSuccessCriteriaMet:
			if !hasTrueCondition(j, batchv1.JobSuccessCriteriaMet) {
				status.Conditions = append(status.Conditions, *c)
				flush = true
			}
			st.finished = newCondition(batchv1.JobComplete, corev1.ConditionTrue, c.Reason, c.Message, now)
		}
	}
	tp.flush = flush
	return tp
}

// cleanUncounted moves the UIDs of pods without the finalizer out of
// status.uncountedTerminatedPods into the counters. It reports a change.
func cleanUncounted(status *batchv1.JobStatus, withFinalizer map[types.UID]bool) bool {
	u := status.UncountedTerminatedPods
	if u == nil {
		return false
	}
	keep := func(uids []types.UID) []types.UID {
		var out []types.UID
		for _, id := range uids {
			if withFinalizer[id] {
				out = append(out, id)
			}
		}
		return out
	}
	changed := false
	if s := keep(u.Succeeded); len(s) != len(u.Succeeded) {
		status.Succeeded += int32(len(u.Succeeded) - len(s))
		u.Succeeded, changed = s, true
	}
	if f := keep(u.Failed); len(f) != len(u.Failed) {
		status.Failed += int32(len(u.Failed) - len(f))
		u.Failed, changed = f, true
	}
	return changed
}

// enactFinished sets the terminal condition (and, for Complete, the
// completion time) once no pod is left uncounted or terminating. It
// reports whether the Job is now finished.
func enactFinished(status *batchv1.JobStatus, cond *batchv1.JobCondition, terminating int32, now time.Time) bool {
	if cond == nil {
		return false
	}
	if u := status.UncountedTerminatedPods; u != nil && len(u.Succeeded)+len(u.Failed) > 0 {
		return false
	}
	if terminating > 0 {
		return false
	}
	status.Conditions, _ = ensureCondition(status.Conditions, cond.Type, cond.Status, cond.Reason, cond.Message, now)
	if cond.Type == batchv1.JobComplete {
		c := findCondition(status.Conditions, batchv1.JobComplete)
		t := c.LastTransitionTime
		status.CompletionTime = &t
	}
	return true
}

// ensureCondition sets a condition's status, reason and message, adding
// it unless it would be added as False; it reports a change.
func ensureCondition(list []batchv1.JobCondition, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, msg string, now time.Time) ([]batchv1.JobCondition, bool) {
	if c := findCondition(list, t); c != nil {
		if c.Status == status && c.Reason == reason && c.Message == msg {
			return list, false
		}
		*c = *newCondition(t, status, reason, msg, now)
		return list, true
	}
	if status == corev1.ConditionFalse {
		return list, false
	}
	return append(list, *newCondition(t, status, reason, msg, now)), true
}

// backoffRecord is the failure back-off state of one Job: failures since
// the last success and when the last one happened.
type backoffRecord struct {
	failures    int32
	lastFailure time.Time
}

// nextBackoff folds the pods that finished since into rec, as upstream: a
// success resets it, counting only the failures after the last success.
func nextBackoff(rec backoffRecord, succeeded, failed []*corev1.Pod) backoffRecord {
	if len(failed) == 0 && len(succeeded) == 0 {
		return rec
	}
	var lastSuccess time.Time
	if len(succeeded) > 0 {
		rec = backoffRecord{}
		for _, p := range succeeded {
			if t := finishedAt(p); t.After(lastSuccess) {
				lastSuccess = t
			}
		}
	}
	for _, p := range failed {
		t := finishedAt(p)
		if len(succeeded) > 0 && !t.After(lastSuccess) {
			continue
		}
		rec.failures++
		if t.After(rec.lastFailure) {
			rec.lastFailure = t
		}
	}
	return rec
}

// remaining is how long pod creation must still wait: base doubled for
// each failure after the first, capped, counted from the last failure.
func (rec backoffRecord) remaining(now time.Time, base, maxDelay time.Duration) time.Duration {
	if rec.failures == 0 {
		return 0
	}
	d := base
	for i := int32(1); i < rec.failures && d < maxDelay; i++ {
		d *= 2
	}
	d = min(d, maxDelay)
	if left := d - now.Sub(rec.lastFailure); left > 0 {
		return left
	}
	return 0
}

package job

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The pure decisions of a sync, as upstream's Job controller makes them.

// Condition reasons and messages (upstream's).
const (
	reasonCompletionsReached = batchv1.JobReasonCompletionsReached
	msgCompletionsReached    = "Reached expected number of succeeded pods"
	msgBackoffLimit          = "Job has reached the specified backoff limit"
	msgDeadline              = "Job was active longer than specified deadline"
	msgMaxFailedIndexes      = "Job has exceeded the specified maximal number of failed indexes"
	msgFailedIndexes         = "Job has failed indexes"
)

// Limits per sync, as upstream.
const (
	// maxUncounted bounds the UIDs in status.uncountedTerminatedPods.
	maxUncounted = 500
	// maxCreateDelete bounds the pods created or deleted in one sync.
	maxCreateDelete = 500
)

// state is what one sync knows of a Job: a working copy whose status the
// sync edits, its pods, and what follows from them.
type state struct {
	job         *batchv1.Job
	pods        []*corev1.Pod
	active      []*corev1.Pod
	ready       int32
	terminating int32
	// expectedRm are pods whose tracking finalizer this controller removed
	// and the cache does not show yet: already counted.
	expectedRm map[types.UID]bool
	uncounted  struct{ succeeded, failed map[types.UID]bool }
	// newSucceeded and newFailed finished and are not counted anywhere yet.
	newSucceeded, newFailed []*corev1.Pod
	succeeded, failed       int32
	// Indexed Jobs: indexes counted before this sync and now; failed
	// indexes (with backoffLimitPerIndex, else nil).
	prevSucceededIdx, succeededIdx indexSet
	failedIdx                      indexSet
	// finished is the terminal (or interim) condition the sync reached.
	finished *batchv1.JobCondition
}

// newState classifies pods for j (a copy the sync may edit).
func newState(j *batchv1.Job, pods []*corev1.Pod, expectedRm map[types.UID]bool) *state {
	if j.Status.UncountedTerminatedPods == nil {
		j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	st := &state{job: j, pods: pods, expectedRm: expectedRm}
	st.active = filter(pods, isActive)
	st.ready = count(st.active, isReady)
	st.terminating = count(pods, isTerminating)
	st.uncounted.succeeded = uidSet(j.Status.UncountedTerminatedPods.Succeeded)
	st.uncounted.failed = uidSet(j.Status.UncountedTerminatedPods.Failed)
	tracked := func(p *corev1.Pod, uncounted map[types.UID]bool) bool {
		if !hasTracking(p) || uncounted[p.UID] || expectedRm[p.UID] {
			return false
		}
		return !isIndexed(j) || validIndex(p, completions(j)) != noIndex
	}
	for _, p := range pods {
		switch {
		case p.Status.Phase == corev1.PodSucceeded && tracked(p, st.uncounted.succeeded):
			st.newSucceeded = append(st.newSucceeded, p)
		case isFailed(p, j) && tracked(p, st.uncounted.failed):
			st.newFailed = append(st.newFailed, p)
		}
	}
	st.succeeded = j.Status.Succeeded + int32(len(st.newSucceeded)+len(st.uncounted.succeeded))
	st.failed = j.Status.Failed + int32(len(st.uncounted.failed))
	for _, p := range st.newFailed {
		if matchFailurePolicy(j.Spec.PodFailurePolicy, p).counts() {
			st.failed++
		}
	}
	if isIndexed(j) {
		n := int(completions(j))
		st.prevSucceededIdx = parseIndexes(j.Status.CompletedIndexes, n)
		st.succeededIdx = parseIndexes(j.Status.CompletedIndexes, n)
		for _, p := range st.newSucceeded {
			st.succeededIdx[validIndex(p, completions(j))] = true
		}
		st.succeeded = int32(len(st.succeededIdx))
		if j.Spec.BackoffLimitPerIndex != nil {
			st.failedIdx = failedIndexes(j, pods, st.succeededIdx)
		}
	}
	return st
}

// failedIndexes are the indexes of an Indexed Job with backoffLimitPerIndex
// that failed for good: recorded in its status, or whose failed pod matched
// a FailIndex rule or exhausted the index's backoff limit.
func failedIndexes(j *batchv1.Job, pods []*corev1.Pod, succeeded indexSet) indexSet {
	n := completions(j)
	out := indexSet{}
	if j.Status.FailedIndexes != nil {
		out = parseIndexes(*j.Status.FailedIndexes, int(n))
	}
	for _, p := range pods {
		ix := validIndex(p, n)
		if ix == noIndex || succeeded[ix] || !isFailed(p, j) {
			continue
		}
		m := matchFailurePolicy(j.Spec.PodFailurePolicy, p)
		switch {
		case m.action == batchv1.PodFailurePolicyActionFailIndex:
			out[ix] = true
		case m.counts() && indexFailureCount(p)+1 > *j.Spec.BackoffLimitPerIndex:
			out[ix] = true
		}
	}
	return out
}

// indexFailures returns, per index, how many of its pods failed so far:
// the count a replacement pod carries.
func indexFailures(j *batchv1.Job, pods []*corev1.Pod) map[int]int32 {
	out := map[int]int32{}
	for _, p := range pods {
		ix := validIndex(p, completions(j))
		if ix == noIndex || !isFailed(p, j) {
			continue
		}
		n := indexFailureCount(p)
		if matchFailurePolicy(j.Spec.PodFailurePolicy, p).counts() {
			n++
		}
		out[ix] = max(out[ix], n)
	}
	return out
}

func findCondition(list []batchv1.JobCondition, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range list {
		if list[i].Type == t {
			return &list[i]
		}
	}
	return nil
}

func hasTrueCondition(j *batchv1.Job, t batchv1.JobConditionType) bool {
	c := findCondition(j.Status.Conditions, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

// isFinished: the Job has a Complete or Failed condition that is True.
func isFinished(j *batchv1.Job) bool {
	return hasTrueCondition(j, batchv1.JobComplete) || hasTrueCondition(j, batchv1.JobFailed)
}

func newCondition(t batchv1.JobConditionType, status corev1.ConditionStatus, reason, msg string, now time.Time) *batchv1.JobCondition {
	ts := metav1.NewTime(now)
	return &batchv1.JobCondition{Type: t, Status: status, Reason: reason, Message: msg, LastProbeTime: ts, LastTransitionTime: ts}
}

// finishCondition decides whether the Job has met its success criteria or
// failed, returning the interim condition (SuccessCriteriaMet or
// FailureTarget, or Failed when the target was recorded already) and, when
// it has an active deadline still ahead, how long until it.
func finishCondition(st *state, now time.Time) (*batchv1.JobCondition, time.Duration) {
	j := st.job
	if c := findCondition(j.Status.Conditions, batchv1.JobSuccessCriteriaMet); c != nil && c.Status == corev1.ConditionTrue {
		return c, 0
	}
	if c := findCondition(j.Status.Conditions, batchv1.JobFailureTarget); c != nil && c.Status == corev1.ConditionTrue {
		return newCondition(batchv1.JobFailed, corev1.ConditionTrue, c.Reason, c.Message, now), 0
	}
	if j.Spec.PodFailurePolicy != nil {
		for _, p := range st.pods {
			if !isFailed(p, j) {
				continue
			}
			if m := matchFailurePolicy(j.Spec.PodFailurePolicy, p); m.failJob != "" {
				return newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonPodFailurePolicy, m.failJob, now), 0
			}
		}
	}
	var wait time.Duration
	switch {
	case st.failed > *j.Spec.BackoffLimit || pastBackoffLimitOnFailure(j, st.pods):
		return newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimit, now), 0
	case j.Spec.ActiveDeadlineSeconds != nil && j.Status.StartTime != nil && !suspended(j):
		left := time.Duration(*j.Spec.ActiveDeadlineSeconds)*time.Second - now.Sub(j.Status.StartTime.Time)
		if left <= 0 {
			return newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonDeadlineExceeded, msgDeadline, now), 0
		}
		wait = left
	}
	if st.failedIdx != nil {
		switch {
		case j.Spec.MaxFailedIndexes != nil && len(st.failedIdx) > int(*j.Spec.MaxFailedIndexes):
			return newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonMaxFailedIndexesExceeded, msgMaxFailedIndexes, now), 0
		case len(st.failedIdx) > 0 && len(st.failedIdx)+len(st.succeededIdx) >= int(completions(j)):
			return newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonFailedIndexes, msgFailedIndexes, now), 0
		}
	}
	return nil, wait
}

// pastBackoffLimitOnFailure: for pods restarted in place (OnFailure), the
// container restarts of running and pending pods reached backoffLimit.
func pastBackoffLimitOnFailure(j *batchv1.Job, pods []*corev1.Pod) bool {
	if j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, s := range p.Status.InitContainerStatuses {
			restarts += s.RestartCount
		}
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
	}
	if *j.Spec.BackoffLimit == 0 {
		return restarts > 0
	}
	return restarts >= *j.Spec.BackoffLimit
}

// isComplete: enough pods succeeded (any one, without completions) and none
// is active any more.
func isComplete(st *state, active int32) bool {
	if active > 0 {
		return false
	}
	if st.job.Spec.Completions == nil {
		return st.succeeded > 0
	}
	return st.succeeded >= *st.job.Spec.Completions
}

// managePlan is what a sync does to the pods of a running Job.
type managePlan struct {
	// remove are active pods to delete (their finalizer removed first, so
	// they are not counted as failures): the Job is suspended, or runs
	// too many, or duplicates of an index.
	remove []*corev1.Pod
	// create is how many pods to create; indexes their completion indexes
	// (Indexed Jobs), with failures the prior failures of each index.
	create   int
	indexes  []int
	failures map[int]int32
	// retryAfter, when positive: pods are due but the failure back-off
	// holds them until then.
	retryAfter time.Duration
}

// planManage decides the pods to delete or create so that the Job runs
// min(parallelism, remaining completions) pods, nothing when suspended;
// backoff is the failure back-off still to wait before creating.
func planManage(st *state, backoff time.Duration) managePlan {
	j := st.job
	active := int32(len(st.active))
	if suspended(j) {
		return managePlan{remove: removalOrder(st.active)}
	}
	parallelism := int32(1)
	if j.Spec.Parallelism != nil {
		parallelism = *j.Spec.Parallelism
	}
	var want int32
	switch {
	case j.Spec.Completions == nil && st.succeeded > 0:
		want = active // leave running what runs
	case j.Spec.Completions == nil:
		want = parallelism
	default:
		want = max(0, min(parallelism, *j.Spec.Completions-st.succeeded))
	}
	var remove []*corev1.Pod
	left := st.active
	if isIndexed(j) {
		remove, left = duplicateIndexPods(st.active, completions(j), st.succeededIdx)
	}
	if extra := int(active) - len(remove) - int(want); extra > 0 {
		remove = append(remove, removalOrder(left)[:extra]...)
	}
	if len(remove) > 0 {
		return managePlan{remove: remove[:min(len(remove), maxCreateDelete)]}
	}
	var terminating int32
	if onlyReplaceFailed(j) {
		terminating = st.terminating
	}
	diff := int(want - terminating - active)
	if diff <= 0 {
		return managePlan{}
	}
	if backoff > 0 {
		return managePlan{retryAfter: backoff}
	}
	diff = min(diff, maxCreateDelete)
	if !isIndexed(j) {
		return managePlan{create: diff}
	}
	busy := map[int]bool{}
	for _, p := range st.pods {
		if isActive(p) || (onlyReplaceFailed(j) && isTerminating(p)) {
			if ix := validIndex(p, completions(j)); ix != noIndex {
				busy[ix] = true
			}
		}
	}
	done := indexSet{}
	for i := range st.succeededIdx {
		done[i] = true
	}
	for i := range st.failedIdx {
		done[i] = true
	}
	idx := firstPendingIndexes(diff, completions(j), done, busy)
	plan := managePlan{create: len(idx), indexes: idx}
	if j.Spec.BackoffLimitPerIndex != nil {
		plan.failures = indexFailures(j, st.pods)
	}
	return plan
}

// duplicateIndexPods splits the active pods of an Indexed Job into those to
// remove (no valid index, an index already succeeded, or a second pod of an
// index: the newer goes) and the rest.
func duplicateIndexPods(active []*corev1.Pod, n int32, succeeded indexSet) (remove, keep []*corev1.Pod) {
	byIndex := map[int]*corev1.Pod{}
	for _, p := range active {
		ix := validIndex(p, n)
		if ix == noIndex || succeeded[ix] {
			remove = append(remove, p)
			continue
		}
		if q, ok := byIndex[ix]; ok {
			older, newer := q, p
			if p.CreationTimestamp.Before(&q.CreationTimestamp) {
				older, newer = p, q
			}
			byIndex[ix] = older
			remove = append(remove, newer)
			continue
		}
		byIndex[ix] = p
	}
	for _, p := range active {
		if byIndex[validIndex(p, n)] == p {
			keep = append(keep, p)
		}
	}
	return remove, keep
}

package job

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Pure facts about a Job's pods.

// hasTracking reports whether p still carries the Job tracking finalizer:
// its outcome is not yet counted in the Job's status.
func hasTracking(p *corev1.Pod) bool {
	return slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer)
}

// isActive: not finished and not being deleted.
func isActive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// isTerminating: being deleted, not finished yet.
func isTerminating(p *corev1.Pod) bool {
	return p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// onlyReplaceFailed: a pod being deleted is replaced only once it failed
// (podReplacementPolicy Failed, implied by a pod failure policy).
func onlyReplaceFailed(j *batchv1.Job) bool {
	if j.Spec.PodFailurePolicy != nil {
		return true
	}
	return j.Spec.PodReplacementPolicy != nil && *j.Spec.PodReplacementPolicy == batchv1.Failed
}

// isFailed reports whether p counts as failed: phase Failed, or (unless
// only failed pods are replaced) deleted before it succeeded.
func isFailed(p *corev1.Pod, j *batchv1.Job) bool {
	if p.Status.Phase == corev1.PodFailed {
		return true
	}
	if onlyReplaceFailed(j) {
		return false
	}
	return p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded
}

func isIndexed(j *batchv1.Job) bool {
	return j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion
}

func completions(j *batchv1.Job) int32 {
	if j.Spec.Completions == nil {
		return 0
	}
	return *j.Spec.Completions
}

func suspended(j *batchv1.Job) bool { return j.Spec.Suspend != nil && *j.Spec.Suspend }

func filter(pods []*corev1.Pod, keep func(*corev1.Pod) bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}

func count(pods []*corev1.Pod, f func(*corev1.Pod) bool) int32 {
	var n int32
	for _, p := range pods {
		if f(p) {
			n++
		}
	}
	return n
}

// finishedAt estimates when p finished: its last container's finish, else
// when it stopped being ready, else its deletion, else its creation.
func finishedAt(p *corev1.Pod) time.Time {
	var last time.Time
	all := len(p.Status.ContainerStatuses) > 0
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Terminated == nil || s.State.Terminated.FinishedAt.IsZero() {
			all = false
			break
		}
		if t := s.State.Terminated.FinishedAt.Time; t.After(last) {
			last = t
		}
	}
	if all {
		return last
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	if p.DeletionTimestamp != nil {
		grace := int64(0)
		if p.DeletionGracePeriodSeconds != nil {
			grace = *p.DeletionGracePeriodSeconds
		}
		return p.DeletionTimestamp.Add(-time.Duration(grace) * time.Second)
	}
	return p.CreationTimestamp.Time
}

// removalOrder sorts pods to delete first those least far along: not ready
// before ready, unscheduled before scheduled, pending before running, then
// newer first.
func removalOrder(pods []*corev1.Pod) []*corev1.Pod {
	out := slices.Clone(pods)
	rank := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	phase := func(p corev1.PodPhase) int {
		switch p {
		case corev1.PodPending:
			return 0
		case corev1.PodUnknown:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(out, func(a, b *corev1.Pod) int {
		if c := cmp.Compare(rank(a.Spec.NodeName != ""), rank(b.Spec.NodeName != "")); c != 0 {
			return c
		}
		if c := cmp.Compare(phase(a.Status.Phase), phase(b.Status.Phase)); c != 0 {
			return c
		}
		if c := cmp.Compare(rank(isReady(a)), rank(isReady(b))); c != 0 {
			return c
		}
		return b.CreationTimestamp.Compare(a.CreationTimestamp.Time)
	})
	return out
}

// indexFailureCount is how many pods of p's index failed before p
// (its batch.kubernetes.io/job-index-failure-count annotation).
func indexFailureCount(p *corev1.Pod) int32 {
	v, err := strconv.ParseInt(p.Annotations[batchv1.JobIndexFailureCountAnnotation], 10, 32)
	if err != nil || v < 0 {
		return 0
	}
	return int32(v)
}

func uidSet(uids []types.UID) map[types.UID]bool {
	out := make(map[types.UID]bool, len(uids))
	for _, u := range uids {
		out[u] = true
	}
	return out
}

// newPod builds the pod the Job runs, controlled by it and carrying the
// tracking finalizer; index, when not noIndex, makes it the pod of that
// completion index (annotation and label, JOB_COMPLETION_INDEX, hostname
// <job>-<index>) and failures how many pods of the index failed before.
func newPod(j *batchv1.Job, index int, failures int32) *corev1.Pod {
	t := j.Spec.Template.DeepCopy()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    j.Name + "-",
			Namespace:       j.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(j, controllerKind)},
		},
		Spec: t.Spec,
	}
	if !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
		p.Finalizers = append(p.Finalizers, batchv1.JobTrackingFinalizer)
	}
	if index == noIndex {
		return p
	}
	ix := strconv.Itoa(index)
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Annotations[batchv1.JobCompletionIndexAnnotation] = ix
	p.Labels[batchv1.JobCompletionIndexAnnotation] = ix
	if j.Spec.BackoffLimitPerIndex != nil {
		p.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(failures))
	}
	p.GenerateName = j.Name + "-" + ix + "-"
	p.Spec.Hostname = j.Name + "-" + ix
	addIndexEnv(p.Spec.InitContainers)
	addIndexEnv(p.Spec.Containers)
	return p
}

// addIndexEnv gives each container JOB_COMPLETION_INDEX from the index
// annotation, unless it sets the variable itself.
func addIndexEnv(cs []corev1.Container) {
	for i := range cs {
		if slices.ContainsFunc(cs[i].Env, func(e corev1.EnvVar) bool { return e.Name == completionIndexEnv }) {
			continue
		}
		cs[i].Env = append(cs[i].Env, corev1.EnvVar{Name: completionIndexEnv, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + batchv1.JobCompletionIndexAnnotation + "']"},
		}})
	}
}

const completionIndexEnv = "JOB_COMPLETION_INDEX"

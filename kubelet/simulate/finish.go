package simulate

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations that override Finish for one pod.
const (
	// RuntimeAnnotation is how long the pod's containers run before they
	// exit (a Go duration such as "30s"; negative: forever).
	RuntimeAnnotation = "simulate.kubebus.io/runtime"
	// ExitCodeAnnotation is the code they exit with.
	ExitCodeAnnotation = "simulate.kubebus.io/exit-code"
)

// Finish says how the pods that run to completion (restartPolicy Never or
// OnFailure) end on hollow nodes: their containers exit Runtime after they
// started, with ExitCode. Exit code 0 makes the pod Succeeded; another
// makes it Failed (Never) or restarts its containers in place (OnFailure),
// counting the restart as a kubelet does. Pods that restart Always run
// forever. A negative Runtime keeps every pod running.
type Finish struct {
	Runtime  time.Duration
	ExitCode int32
}

// forPod applies the pod's annotations; ok is false when the pod runs
// forever.
func (f Finish) forPod(pod *corev1.Pod) (Finish, bool) {
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever && pod.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return f, false
	}
	if v, ok := pod.Annotations[RuntimeAnnotation]; ok {
		if d, err := time.ParseDuration(v); err == nil {
			f.Runtime = d
		}
	}
	if v, ok := pod.Annotations[ExitCodeAnnotation]; ok {
		if n, err := strconv.ParseInt(v, 10, 32); err == nil {
			f.ExitCode = int32(n)
		}
	}
	return f, f.Runtime >= 0
}

// plan returns the status of a running pod whose containers are due to
// exit at now, or else how long until they are (zero: never).
func (f Finish) plan(pod *corev1.Pod, now time.Time) (*corev1.PodStatus, time.Duration) {
	f, ok := f.forPod(pod)
	if !ok {
		return nil, 0
	}
	started := now
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Running != nil && c.State.Running.StartedAt.Time.Before(started) {
			started = c.State.Running.StartedAt.Time
		}
	}
	if due := started.Add(f.Runtime); now.Before(due) {
		return nil, due.Sub(now)
	}
	st := pod.Status.DeepCopy()
	ts := metav1.NewTime(now.Truncate(time.Second))
	reason := "Completed"
	if f.ExitCode != 0 {
		reason = "Error"
	}
	if f.ExitCode != 0 && pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure {
		// Restarted in place: the pod stays Running.
		for i := range st.ContainerStatuses {
			c := &st.ContainerStatuses[i]
			var startedAt metav1.Time
			if c.State.Running != nil {
				startedAt = c.State.Running.StartedAt
			}
			c.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: f.ExitCode, Reason: reason, StartedAt: startedAt, FinishedAt: ts, ContainerID: c.ContainerID}}
			c.RestartCount++
			c.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}
		}
		return st, 0
	}
	st.Phase = corev1.PodSucceeded
	if f.ExitCode != 0 {
		st.Phase = corev1.PodFailed
	}
	falseStarted := false
	for i := range st.ContainerStatuses {
		c := &st.ContainerStatuses[i]
		var startedAt metav1.Time
		if c.State.Running != nil {
			startedAt = c.State.Running.StartedAt
		}
		c.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: f.ExitCode, Reason: reason, StartedAt: startedAt, FinishedAt: ts, ContainerID: c.ContainerID}}
		c.Ready = false
		c.Started = &falseStarted
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			c.Status, c.Reason, c.LastTransitionTime = corev1.ConditionFalse, "PodCompleted", ts
		}
	}
	return st, 0
}

package pods

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// Pod-level reasons.
const (
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	messageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// activeDeadline returns when the pod's activeDeadlineSeconds ends, if it
// has one and has started.
func activeDeadline(pod *corev1.Pod) (time.Time, bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil || pod.Status.StartTime == nil {
		return time.Time{}, false
	}
	return pod.Status.StartTime.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second), true
}

// deadlineExceeded reports whether the pod ran past its active deadline.
func deadlineExceeded(pod *corev1.Pod, now time.Time) bool {
	d, ok := activeDeadline(pod)
	return ok && !now.Before(d)
}

// isTerminal reports whether phase is final.
func isTerminal(phase corev1.PodPhase) bool {
	return phase == corev1.PodSucceeded || phase == corev1.PodFailed
}

// terminalPhase reports whether the pod (not deleted) has reached a final
// phase: reported before, deadline exceeded, or computed from its
// containers.
func terminalPhase(pod *corev1.Pod, o *observed, now time.Time) bool {
	return isTerminal(pod.Status.Phase) || deadlineExceeded(pod, now) || isTerminal(podPhase(pod, o))
}

// podPhase computes the phase from what the runtime reports, following
// upstream's getPhase over the container statuses the kubelet would
// report: the newest container of each name counts; one that is created
// or unknown counts by the exit of the one before it.
func podPhase(pod *corev1.Pod, o *observed) corev1.PodPhase {
	policy := restartPolicy(pod)
	var running, waiting, stopped, succeeded int
	initialized := false
	for i := range pod.Spec.Containers {
		if o.latest(pod.Spec.Containers[i].Name) != nil {
			initialized = true
		}
	}
	pendingInit, failedInit := 0, 0
	for i := range pod.Spec.InitContainers {
		spec := &pod.Spec.InitContainers[i]
		c := o.latest(spec.Name)
		if isSidecar(spec) {
			if !initialized && (c == nil || c.State != runtime.ContainerRunning) {
				pendingInit++
			}
			continue
		}
		switch {
		case c == nil || c.State == runtime.ContainerRunning:
			if !initialized {
				pendingInit++
			}
		case c.State == runtime.ContainerExited:
			if c.ExitCode != 0 {
				failedInit++
			}
		default: // created or unknown
			if prev := o.previousExited(spec.Name); prev != nil {
				if prev.ExitCode != 0 {
					failedInit++
				}
			} else if !initialized {
				pendingInit++
			}
		}
	}
	for i := range pod.Spec.Containers {
		name := pod.Spec.Containers[i].Name
		c := o.latest(name)
		switch {
		case c == nil:
			waiting++
		case c.State == runtime.ContainerRunning:
			running++
		case c.State == runtime.ContainerExited:
			stopped++
			if c.ExitCode == 0 {
				succeeded++
			}
		default:
			if prev := o.previousExited(name); prev != nil {
				stopped++
				if prev.ExitCode == 0 {
					succeeded++
				}
			} else {
				waiting++
			}
		}
	}
	switch {
	case failedInit > 0 && policy == corev1.RestartPolicyNever:
		return corev1.PodFailed
	case pendingInit > 0 || waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0:
		switch {
		case policy == corev1.RestartPolicyAlways:
			return corev1.PodRunning
		case stopped == succeeded:
			return corev1.PodSucceeded
		case policy == corev1.RestartPolicyNever:
			return corev1.PodFailed
		default:
			return corev1.PodRunning
		}
	}
	return corev1.PodPending
}

// deletedPhase is the phase of a deleted pod once none of its containers
// runs: Succeeded when every container exited 0, else Failed.
func deletedPhase(pod *corev1.Pod, o *observed) corev1.PodPhase {
	if len(pod.Spec.Containers) == 0 {
		return corev1.PodFailed
	}
	for i := range pod.Spec.Containers {
		c := o.latest(pod.Spec.Containers[i].Name)
		if c == nil || c.State != runtime.ContainerExited || c.ExitCode != 0 {
			return corev1.PodFailed
		}
	}
	return corev1.PodSucceeded
}

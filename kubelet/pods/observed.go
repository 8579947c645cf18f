package pods

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// observed indexes what the runtime reports about one pod.
type observed struct {
	// sandboxes, newest first.
	sandboxes []runtime.Sandbox
	// current is the newest Ready sandbox, nil when none is ready.
	current *runtime.Sandbox
	// byName holds the containers of each name, newest first.
	byName map[string][]runtime.Container
	// all holds every container, in a deterministic order.
	all []runtime.Container
}

func observe(sandboxes []runtime.Sandbox, containers []runtime.Container) *observed {
	o := &observed{byName: map[string][]runtime.Container{}}
	o.sandboxes = slices.Clone(sandboxes)
	slices.SortStableFunc(o.sandboxes, func(a, b runtime.Sandbox) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	for i := range o.sandboxes {
		if o.sandboxes[i].State == runtime.SandboxReady {
			o.current = &o.sandboxes[i]
			break
		}
	}
	o.all = slices.Clone(containers)
	slices.SortStableFunc(o.all, newestFirst)
	for _, c := range o.all {
		o.byName[c.Name] = append(o.byName[c.Name], c)
	}
	return o
}

// newestFirst orders containers by attempt, then creation time, then ID,
// newest first.
func newestFirst(a, b runtime.Container) int {
	if c := cmp.Compare(b.Attempt, a.Attempt); c != 0 {
		return c
	}
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(b.ID, a.ID)
}

// latest returns the newest container named name, or nil.
func (o *observed) latest(name string) *runtime.Container {
	if cs := o.byName[name]; len(cs) > 0 {
		return &cs[0]
	}
	return nil
}

// latestInCurrent returns the newest container named name in the current
// sandbox, or nil.
func (o *observed) latestInCurrent(name string) *runtime.Container {
	if o.current == nil {
		return nil
	}
	for i, c := range o.byName[name] {
		if c.SandboxID == o.current.ID {
			return &o.byName[name][i]
		}
	}
	return nil
}

// previousExited returns the newest exited container named name that is
// older than the newest one, or nil.
func (o *observed) previousExited(name string) *runtime.Container {
	cs := o.byName[name]
	for i := 1; i < len(cs); i++ {
		if cs[i].State == runtime.ContainerExited {
			return &cs[i]
		}
	}
	return nil
}

// nextAttempt is the attempt number (restart count) of the next container
// named name: one more than the newest one, or, when the runtime has none
// (all removed), one more than the restart count the pod's status reports
// for a container that did run.
func (o *observed) nextAttempt(pod *corev1.Pod, name string) int {
	if c := o.latest(name); c != nil {
		return c.Attempt + 1
	}
	if st := statusOf(pod, name); st != nil && st.ContainerID != "" {
		return int(st.RestartCount) + 1
	}
	return 0
}

// running reports whether any container is running or in an unknown state
// (which may be running).
func (o *observed) running() bool {
	for _, c := range o.all {
		if alive(c) {
			return true
		}
	}
	return false
}

// alive reports whether c may have processes running.
func alive(c runtime.Container) bool {
	return c.State == runtime.ContainerRunning || c.State == runtime.ContainerUnknown
}

// statusOf returns the status the pod reports for the container or init
// container named name, or nil.
func statusOf(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	if pod == nil {
		return nil
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// isSidecar reports whether c is a restartable init container.
func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// restartPolicy returns the pod's restart policy, Always when unset.
func restartPolicy(pod *corev1.Pod) corev1.RestartPolicy {
	if pod.Spec.RestartPolicy == "" {
		return corev1.RestartPolicyAlways
	}
	return pod.Spec.RestartPolicy
}

// shouldRestart reports whether an exited container with exitCode must be
// started again under policy.
func shouldRestart(policy corev1.RestartPolicy, exitCode int32) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	default:
		return true
	}
}

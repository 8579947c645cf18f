package agent

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/kubelet/runtime"
	"github.com/kubebus/kubebus/kubelet/server"
)

var _ server.LogLocator = (*Kubelet)(nil)

// LogPath finds the log file of a pod's container for the log server: the
// newest instance, or with previous the one before it.
func (k *Kubelet) LogPath(ctx context.Context, namespace, name, container string, previous bool) (string, func() bool, error) {
	var pod *corev1.Pod
	k.mu.Lock()
	for _, p := range k.pods {
		if p.Namespace == namespace && p.Name == name {
			pod = p
		}
	}
	k.mu.Unlock()
	if pod == nil {
		return "", nil, server.PodNotFound(namespace, name)
	}
	inSpec := false
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			inSpec = inSpec || c.Name == container
		}
	}
	if !inSpec {
		return "", nil, server.ContainerNotFound(name, container)
	}
	_, cs, err := k.podRuntime(ctx, pod.UID)
	if err != nil {
		return "", nil, err
	}
	var mine []runtime.Container
	for _, c := range cs {
		if c.Name == container {
			mine = append(mine, c)
		}
	}
	slices.SortFunc(mine, func(a, b runtime.Container) int {
		if a.Attempt != b.Attempt {
			return b.Attempt - a.Attempt
		}
		return b.CreatedAt.Compare(a.CreatedAt)
	})
	i := 0
	if previous {
		i = 1
		// A container waiting to be restarted has no current instance:
		// its last exit is the previous one, as kubectl users expect of a
		// crash-looping container.
		if len(mine) > 0 && mine[0].State == runtime.ContainerExited && restarts(pod, mine[0].ExitCode) {
			i = 0
		}
	}
	if len(mine) <= i {
		if previous {
			return "", nil, server.PreviousNotFound(name, container)
		}
		return "", nil, server.ContainerWaiting(name, container, "ContainerCreating")
	}
	c := mine[i]
	id := c.ID
	running := func() bool {
		st, err := k.rt.ContainerStatus(context.WithoutCancel(ctx), id)
		return err == nil && st.State == runtime.ContainerRunning
	}
	return c.LogPath, running, nil
}

// restarts reports whether the pod's restart policy restarts a container
// that exited with code.
func restarts(pod *corev1.Pod, code int32) bool {
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return code != 0
	}
	return true
}

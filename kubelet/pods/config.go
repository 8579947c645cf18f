package pods

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// CPU arithmetic of upstream's kuberuntime (cgroup v1 units, which
// containerd converts for cgroup v2).
const (
	minShares      = 2
	maxShares      = 262144
	sharesPerCPU   = 1024
	milliCPUToCPU  = 1000
	CPUQuotaPeriod = 100000 // microseconds: 100ms
	minQuotaPeriod = 1000
)

// MilliCPUToShares converts a cpu request to cpu.shares: 1024 per cpu,
// at least 2 (the kernel's value for "no request"), at most 262144.
func MilliCPUToShares(milliCPU int64) int64 {
	if milliCPU <= 0 {
		return minShares
	}
	shares := milliCPU * sharesPerCPU / milliCPUToCPU
	return max(minShares, min(shares, maxShares))
}

// MilliCPUToQuota converts a cpu limit to a CFS quota per CPUQuotaPeriod:
// 0 (no quota) without a limit, else at least 1ms.
func MilliCPUToQuota(milliCPU int64) int64 {
	if milliCPU <= 0 {
		return 0
	}
	return max(milliCPU*CPUQuotaPeriod/milliCPUToCPU, minQuotaPeriod)
}

// ContainerInput is what BuildContainerConfig builds from.
type ContainerInput struct {
	Pod       *corev1.Pod
	Container *corev1.Container
	// Attempt is the restart count (Action.Attempt).
	Attempt int
	// Env is the resolved environment (ResolveEnv).
	Env []runtime.KeyValue
	// Mounts are the container's volume mounts.
	Mounts []runtime.Mount
	// LogPath receives the container's output (see LogPath).
	LogPath string
	// SandboxID is recorded in the runtime.LabelSandbox label.
	SandboxID string
}

// BuildContainerConfig turns a container of the spec into what the
// runtime creates: command and args with $(NAME) expanded over Env,
// resources as cgroup settings, the user, group and privilege of the
// security context (the container's over the pod's), and the labels a
// restarted kubelet reads back.
func BuildContainerConfig(in ContainerInput) (runtime.ContainerConfig, error) {
	pod, c := in.Pod, in.Container
	switch {
	case pod == nil || c == nil:
		return runtime.ContainerConfig{}, errors.New("pods: BuildContainerConfig needs a pod and a container")
	case c.Name == "":
		return runtime.ContainerConfig{}, errors.New("pods: container has no name")
	case c.Image == "":
		return runtime.ContainerConfig{}, fmt.Errorf("container %q has no image", c.Name)
	case in.Attempt < 0:
		return runtime.ContainerConfig{}, fmt.Errorf("container %q: negative attempt %d", c.Name, in.Attempt)
	}
	vars := map[string]string{}
	for _, kv := range in.Env {
		vars[kv.Key] = kv.Value
	}
	expand := func(list []string) []string {
		if list == nil {
			return nil
		}
		out := make([]string, len(list))
		for i, s := range list {
			out[i] = Expand(s, mapLookup(vars))
		}
		return out
	}
	init := false
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			init = true
		}
	}
	labels := map[string]string{
		runtime.LabelPodUID:       string(pod.UID),
		runtime.LabelPodName:      pod.Name,
		runtime.LabelPodNamespace: pod.Namespace,
		runtime.LabelContainer:    c.Name,
		runtime.LabelAttempt:      strconv.Itoa(in.Attempt),
		runtime.LabelHash:         ContainerHash(c),
	}
	if init {
		labels[runtime.LabelInit] = "true"
	}
	if in.SandboxID != "" {
		labels[runtime.LabelSandbox] = in.SandboxID
	}
	cfg := runtime.ContainerConfig{
		Name:       c.Name,
		Attempt:    in.Attempt,
		Image:      c.Image,
		Command:    expand(c.Command),
		Args:       expand(c.Args),
		Env:        in.Env,
		WorkingDir: c.WorkingDir,
		Mounts:     in.Mounts,
		LogPath:    in.LogPath,
		Labels:     labels,
		TTY:        c.TTY,
		Stdin:      c.Stdin,
	}
	req := c.Resources.Requests.Cpu().MilliValue()
	lim := c.Resources.Limits.Cpu().MilliValue()
	if req == 0 && lim > 0 {
		req = lim // API defaulting does this; be safe without it
	}
	cfg.CPUShares = MilliCPUToShares(req)
	if lim > 0 {
		cfg.CPUPeriod = CPUQuotaPeriod
		cfg.CPUQuota = MilliCPUToQuota(lim)
	}
	cfg.MemoryLimitBytes = c.Resources.Limits.Memory().Value()

	if psc := pod.Spec.SecurityContext; psc != nil {
		cfg.RunAsUser, cfg.RunAsGroup = psc.RunAsUser, psc.RunAsGroup
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			cfg.RunAsUser = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			cfg.RunAsGroup = sc.RunAsGroup
		}
		cfg.Privileged = sc.Privileged != nil && *sc.Privileged
	}
	return cfg, nil
}

// LogPath is where the container's log goes, as upstream:
// <dir>/<namespace>_<name>_<uid>/<container>/<attempt>.log (dir is
// /var/log/pods on a real node).
func LogPath(dir string, pod *corev1.Pod, container string, attempt int) string {
	return filepath.Join(PodLogDir(dir, pod), container, strconv.Itoa(attempt)+".log")
}

// PodLogDir is the directory holding the logs of the pod's containers.
func PodLogDir(dir string, pod *corev1.Pod) string {
	return filepath.Join(dir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

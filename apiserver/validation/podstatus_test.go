package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func terminated(name string, code int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
}

func running(name string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

// A write through pods/status is validated as upstream's status strategy
// does: the status and the metadata change, never the stored spec.
func TestValidatePodStatusUpdate(t *testing.T) {
	t.Parallel()
	tests := []podUpdateCase{
		{"no change", nil, func(*corev1.Pod) {}, nil},
		{"running with IPs and conditions", nil, func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.PodIP = "10.244.0.7"
			p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.0.7"}, {IP: "fd00::7"}}
			p.Status.HostIPs = []corev1.HostIP{{IP: "127.0.0.1"}}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: "example.com/gate", Status: corev1.ConditionTrue}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{running("app")}
		}, nil},
		// The stored spec would fail validation today (an empty image): its
		// status can still be written, and the spec is not reported.
		{"a stored spec is not validated again", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" },
			func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, nil},
		{"a condition type beyond the system ones is a qualified name", nil, func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: "not a name!", Status: corev1.ConditionTrue}}
		}, []want{invalid("status.conditions[0].type")}},
		{"pod IPs are IPs", nil, func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.0.300"}} },
			[]want{invalid("status.podIPs[0]")}},
		{"one pod IP per family", nil, func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.0.7"}, {IP: "10.244.0.8"}} },
			[]want{invalid("status.podIPs")}},
		{"a legacy pod IP already stored stays", func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "010.244.000.007"}} },
			func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, nil},
		{"a legacy pod IP is not taken anew", nil, func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "010.244.000.007"}} },
			[]want{invalid("status.podIPs[0]")}},
		{"host IPs are IPs", nil, func(p *corev1.Pod) { p.Status.HostIPs = []corev1.HostIP{{IP: "node-1"}} },
			[]want{invalid("status.hostIPs[0]")}},
		{"terminated stays terminated under Never", func(p *corev1.Pod) {
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("app", 1)}
		}, func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{running("app")} },
			[]want{forbidden("status.containerStatuses[0].state")}},
		{"a success stays terminated under OnFailure", func(p *corev1.Pod) {
			p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("app", 0)}
		}, func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{running("app")} },
			[]want{forbidden("status.containerStatuses[0].state")}},
		{"a failure restarts under OnFailure", func(p *corev1.Pod) {
			p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("app", 1)}
		}, func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{running("app")} }, nil},
		{"anything restarts under Always", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("app", 0)}
		}, func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{running("app")} }, nil},
		{"an init container stays terminated under Never", func(p *corev1.Pod) {
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "sidecar", Image: "proxy:1",
				RestartPolicy: new(corev1.ContainerRestartPolicyAlways), TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				TerminationMessagePath: "/dev/termination-log", ImagePullPolicy: corev1.PullIfNotPresent})
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{terminated(p.Spec.InitContainers[0].Name, 0), terminated("sidecar", 0)}
		}, func(p *corev1.Pod) {
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{running(p.Spec.InitContainers[0].Name), running("sidecar")}
		}, []want{forbidden("status.initContainerStatuses[0].state")}},
		{"ephemeral containers never restart", func(p *corev1.Pod) {
			p.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{terminated("debug", 1)}
		}, func(p *corev1.Pod) { p.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{running("debug")} },
			[]want{forbidden("status.ephemeralContainerStatuses[0].state")}},
		{"the node is not changed here", nil, func(p *corev1.Pod) { p.Spec.NodeName = "node-1" }, []want{forbidden("status.nodeName")}},
		{"a pod may not become a mirror pod", nil, func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
		}, []want{forbidden("metadata.annotations[kubernetes.io/config.mirror]")}},
		{"name is immutable", nil, func(p *corev1.Pod) { p.Name = "other" }, []want{invalid("metadata.name")}},
	}
	runPodUpdates(t, tests, func(pod, old *corev1.Pod) field.ErrorList { return ValidateSubresourceUpdate(pod, old, "status") })
	// The main resource still validates the whole spec.
	old := validPod()
	old.Spec.Containers[0].Image = ""
	expectErrors(t, ValidateSubresourceUpdate(old.DeepCopy(), old, ""), required("spec.containers[0].image"))
}

package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidatePodUpdate(t *testing.T) {
	t.Parallel()
	tests := []podUpdateCase{
		{"no change", nil, func(*corev1.Pod) {}, nil},
		{"labels may change", nil, func(p *corev1.Pod) { p.Labels = map[string]string{"v": "2"} }, nil},
		{"image may change", nil, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" }, nil},
		{"init image may change", nil, func(p *corev1.Pod) { p.Spec.InitContainers[0].Image = "busybox:1.37" }, nil},
		{"image may not be emptied", nil, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }, []want{required("spec.containers[0].image")}},
		{"tolerations may be added", nil, func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpExists})
		}, nil},
		{"tolerations may not be removed", nil, func(p *corev1.Pod) { p.Spec.Tolerations = nil }, []want{forbidden("spec.tolerations")}},
		{"toleration seconds may change", func(p *corev1.Pod) {
			p.Spec.Tolerations[0].Effect = corev1.TaintEffectNoExecute
			p.Spec.Tolerations[0].TolerationSeconds = new(int64(300))
		}, func(p *corev1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = new(int64(60)) }, nil},
		{"deadline may be set", nil, func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = new(int64(600)) }, nil},
		{"deadline may shrink", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = new(int64(600)) },
			func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = new(int64(60)) }, nil},
		{"deadline may not grow", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = new(int64(600)) },
			func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = new(int64(601)) }, []want{invalid("spec.activeDeadlineSeconds")}},
		{"deadline may not be removed", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = new(int64(600)) },
			func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = nil }, []want{invalid("spec.activeDeadlineSeconds")}},
		{"negative grace period may become 1", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = new(int64(-1)) },
			func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = new(int64(1)) }, nil},
		{"grace period is otherwise fixed", nil, func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = new(int64(1)) }, []want{forbidden("spec")}},
		{"resources are fixed", nil, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits["memory"] = resource.MustParse("256Mi")
		}, []want{forbidden("spec")}},
		{"node name is fixed", nil, func(p *corev1.Pod) { p.Spec.NodeName = "node-1" }, []want{forbidden("spec")}},
		{"containers may not be added", nil, func(p *corev1.Pod) {
			c := p.Spec.Containers[0]
			c.Name = "other"
			c.Ports = nil
			p.Spec.Containers = append(p.Spec.Containers, c)
		}, []want{forbidden("spec.containers")}},
		{"scheduling gates may be removed", func(p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
		}, func(p *corev1.Pod) { p.Spec.SchedulingGates = nil }, nil},
		{"scheduling gates may not be added", nil, func(p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
		}, []want{forbidden("spec.schedulingGates[0].name")}},
		{"a pod may not become a mirror pod", nil, func(p *corev1.Pod) {
			p.Spec.NodeName = ""
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
		}, []want{forbidden("metadata.annotations[kubernetes.io/config.mirror]"), invalid("metadata.annotations[kubernetes.io/config.mirror]")}},
		{"name is immutable", nil, func(p *corev1.Pod) { p.Name = "other" }, []want{invalid("metadata.name")}},
	}
	runPodUpdates(t, tests, func(pod, old *corev1.Pod) field.ErrorList { return ValidateUpdate(pod, old) })
}

// podUpdateCase is a write of a pod and the errors it should get.
type podUpdateCase struct {
	name   string
	old    func(*corev1.Pod) // changes validPod into the stored pod
	change func(*corev1.Pod) // changes the stored pod into the write
	wants  []want
}

// runPodUpdates validates each case's write against its stored pod.
func runPodUpdates(t *testing.T, tests []podUpdateCase, validate func(pod, old *corev1.Pod) field.ErrorList) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			old := validPod()
			if tt.old != nil {
				tt.old(old)
			}
			pod := old.DeepCopy()
			tt.change(pod)
			expectErrors(t, validate(pod, old), tt.wants...)
		})
	}
}

func TestPodUpdateMessage(t *testing.T) {
	t.Parallel()
	old := validPod()
	pod := old.DeepCopy()
	pod.Spec.Containers[0].Ports[0].ContainerPort = 8080
	errs := ValidateUpdate(pod, old)
	expectErrors(t, errs, forbidden("spec"))
	msg := errs[0].Error()
	const prefix = "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`," +
		"`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations)," +
		"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"
	if !strings.HasPrefix(msg, prefix) {
		t.Fatalf("message %q\ndoes not start with %q", msg, prefix)
	}
	if !strings.Contains(msg, "8080") {
		t.Fatalf("message does not show the change:\n%s", msg)
	}
}

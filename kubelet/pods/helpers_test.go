package pods

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// testPod returns a pod with containers named names (image busybox).
func testPod(names ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, NodeName: "node-1"},
	}
	for _, n := range names {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n, Image: "busybox"})
	}
	return p
}

func withInit(p *corev1.Pod, names ...string) *corev1.Pod {
	for _, n := range names {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox"})
	}
	return p
}

func withSidecar(p *corev1.Pod, name string) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: name, Image: "busybox", RestartPolicy: &always})
	return p
}

func withPolicy(p *corev1.Pod, rp corev1.RestartPolicy) *corev1.Pod {
	p.Spec.RestartPolicy = rp
	return p
}

func ready(id string) runtime.Sandbox {
	return runtime.Sandbox{ID: id, PodUID: "uid-1", Name: "web", Namespace: "ns", State: runtime.SandboxReady, IP: "10.0.0.5", CreatedAt: t0}
}

func dead(id string, created time.Time) runtime.Sandbox {
	return runtime.Sandbox{ID: id, PodUID: "uid-1", State: runtime.SandboxNotReady, CreatedAt: created}
}

// running returns a running container of spec in sandbox sb.
func running(p *corev1.Pod, id, name, sb string, attempt int, started time.Time) runtime.Container {
	return runtime.Container{ID: id, SandboxID: sb, Name: name, Attempt: attempt, Image: "busybox", ImageID: "sha256:bb",
		State: runtime.ContainerRunning, CreatedAt: started, StartedAt: started, Labels: labelsFor(p, name, attempt)}
}

func exited(p *corev1.Pod, id, name, sb string, attempt int, code int32, started, finished time.Time) runtime.Container {
	c := running(p, id, name, sb, attempt, started)
	c.State, c.ExitCode, c.FinishedAt = runtime.ContainerExited, code, finished
	return c
}

func labelsFor(p *corev1.Pod, name string, attempt int) map[string]string {
	l := map[string]string{runtime.LabelContainer: name, runtime.LabelAttempt: strconv.Itoa(attempt)}
	if p != nil {
		if c := findContainer(p, name); c != nil {
			l[runtime.LabelHash] = ContainerHash(c)
		}
	}
	return l
}

func ptr[T any](v T) *T { return &v }

func actionStrings(p Plan) []string {
	out := []string{}
	for _, a := range p.Actions {
		out = append(out, a.String())
	}
	return out
}

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/test/harness"
)

// TestIntegrationKubeletInstantExits: containers that exit as soon as
// they start, with 0 and with 1, all end their pods Succeeded or Failed
// with their real exit codes: the kubelet notices every exit, however
// soon it comes after the start.
func TestIntegrationKubeletInstantExits(t *testing.T) {
	s, _ := harness.StartServerWithNode(t)
	cs := s.Clientset(t)
	ctx := context.Background()
	const n = 16
	for i := 0; i < n; i++ {
		script := "true"
		if i%2 == 1 {
			script = "echo failing; exit 1"
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("instant-%d", i), Labels: map[string]string{"app": "instant"}},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
				Name: "c", Image: "busybox:latest", ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"sh", "-c", script},
			}}},
		}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	harness.Eventually(t, 120*time.Second, func() error {
		var pending []string
		for _, p := range podsOf(t, cs, "default", "app=instant") {
			var i int
			fmt.Sscanf(p.Name, "instant-%d", &i)
			want, code := corev1.PodSucceeded, int32(0)
			if i%2 == 1 {
				want, code = corev1.PodFailed, 1
			}
			if p.Status.Phase != want || !exitedWith(&p, code) {
				pending = append(pending, fmt.Sprintf("%s %s (want %s, exit code %d): %s", p.Name, p.Status.Phase, want, code, describePodStatus(&p)))
			}
		}
		if len(pending) > 0 {
			return fmt.Errorf("%d pods not finished:\n%s", len(pending), strings.Join(pending, "\n"))
		}
		return nil
	})
}

// exitedWith reports whether the pod's only container terminated with
// code.
func exitedWith(p *corev1.Pod, code int32) bool {
	return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil &&
		p.Status.ContainerStatuses[0].State.Terminated.ExitCode == code
}

// describePodStatus summarizes a pod's container statuses and conditions
// for a failure message.
func describePodStatus(p *corev1.Pod) string {
	var b strings.Builder
	for _, c := range p.Status.ContainerStatuses {
		fmt.Fprintf(&b, "container %s restarts=%d id=%s ", c.Name, c.RestartCount, c.ContainerID)
		switch st := c.State; {
		case st.Running != nil:
			fmt.Fprintf(&b, "running since %s", st.Running.StartedAt.Format(time.RFC3339))
		case st.Waiting != nil:
			fmt.Fprintf(&b, "waiting reason=%q message=%q", st.Waiting.Reason, st.Waiting.Message)
		case st.Terminated != nil:
			fmt.Fprintf(&b, "terminated exitCode=%d reason=%q message=%q started=%s finished=%s", st.Terminated.ExitCode,
				st.Terminated.Reason, st.Terminated.Message, st.Terminated.StartedAt.Format(time.RFC3339), st.Terminated.FinishedAt.Format(time.RFC3339))
		default:
			b.WriteString("no state")
		}
		b.WriteString("; ")
	}
	if len(p.Status.ContainerStatuses) == 0 {
		b.WriteString("no container statuses; ")
	}
	b.WriteString("conditions:")
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s", c.Type, c.Status)
		if c.Reason != "" {
			fmt.Fprintf(&b, "(%s)", c.Reason)
		}
	}
	if p.Status.Reason != "" || p.Status.Message != "" {
		fmt.Fprintf(&b, "; pod reason=%q message=%q", p.Status.Reason, p.Status.Message)
	}
	return b.String()
}

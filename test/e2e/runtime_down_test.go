package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/test/harness"
)

// TestIntegrationRuntimeDownShowsOnNode: when the local node's containerd
// dies, the kubelet restarts it with backoff, and the Node says so at once:
// Ready=False naming the runtime (what kubectl describe node shows), then
// Ready again.
func TestIntegrationRuntimeDownShowsOnNode(t *testing.T) {
	s, n := harness.StartServerWithNode(t)
	cs := s.Clientset(t)
	// The containerd this test's node started: its command line names the
	// node's directory.
	out, err := exec.Command("pgrep", "-f", "^containerd --config "+n.RootDir+"/").Output()
	pids := strings.Fields(string(out))
	if err != nil || len(pids) != 1 {
		t.Fatalf("finding the node's containerd: %v %q", err, out)
	}
	pid, _ := strconv.Atoi(pids[0])
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ready := func() (corev1.NodeCondition, error) {
		node, err := cs.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{})
		if err != nil {
			return corev1.NodeCondition{}, err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c, nil
			}
		}
		return corev1.NodeCondition{}, fmt.Errorf("no Ready condition")
	}
	harness.Eventually(t, 20*time.Second, func() error {
		c, err := ready()
		if err != nil {
			return err
		}
		if c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "container runtime is down") {
			return fmt.Errorf("Ready=%s %q, want False naming the runtime", c.Status, c.Message)
		}
		return nil
	})
	harness.Eventually(t, 30*time.Second, func() error {
		c, err := ready()
		if err != nil {
			return err
		}
		if c.Status != corev1.ConditionTrue {
			return fmt.Errorf("Ready=%s %q, want True after containerd's restart", c.Status, c.Message)
		}
		return nil
	})
	if out, err := exec.Command("pgrep", "-f", "^containerd --config "+n.RootDir+"/").Output(); err != nil || strings.TrimSpace(string(out)) == pids[0] {
		t.Fatalf("containerd was not restarted: %v %q", err, out)
	}
}

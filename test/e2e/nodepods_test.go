package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/test/harness"
)

// TestIntegrationKubeletsFollowAServerRestart: hollow kubelets in their
// own process keep running while the all-in-one restarts. Its NATS is in
// process and keeps KUBE_NODEPODS in memory, so the stream comes back
// empty: the publisher announces a gap to the kubelets, and they rebuild
// their pods from KUBE_STATE and follow the new stream. A pod from before
// the restart is deleted through its kubelet, and a new one runs.
func TestIntegrationKubeletsFollowAServerRestart(t *testing.T) {
	harness.SkipShort(t)
	// Fixed ports, so that the kubelets find the server again.
	ports := harness.FreePorts(t, 2)
	s := harness.StartServer(t, "", "--secure-port", fmt.Sprint(ports[0]), "--nats-port", fmt.Sprint(ports[1]))
	nodes := harness.StartHollowNodes(t, s, 2)
	cs := s.Clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	running := func(name string) {
		t.Helper()
		harness.Eventually(t, 90*time.Second, func() error {
			p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("pod %s is %s", name, p.Status.Phase)
			}
			return nil
		})
	}
	create := func(name string) {
		t.Helper()
		harness.Eventually(t, 60*time.Second, func() error {
			_, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       corev1.PodSpec{NodeName: "hollow-0", Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
			}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
		running(name)
	}
	create("before")

	s.Restart(t)
	create("after")
	if err := cs.CoreV1().Pods("default").Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 90*time.Second, func() error {
		_, err := cs.CoreV1().Pods("default").Get(ctx, "before", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("pod before still there after its deletion (err %v)", err)
	})
	if !strings.Contains(s.Logs(), "announcing a gap to the kubelets") {
		t.Errorf("the restarted server did not announce a gap to the kubelets")
	}
	harness.Eventually(t, 30*time.Second, func() error {
		if !strings.Contains(nodes.Logs(), "missed events; resyncing") {
			return fmt.Errorf("the hollow kubelets did not rebuild from the state stream")
		}
		return nil
	})
}

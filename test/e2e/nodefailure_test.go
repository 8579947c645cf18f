package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/test/harness"
)

// TestIntegrationNodeFailureReschedules: two groups of hollow nodes; the
// process running one group (one node) is killed; its node stops renewing its lease,
// become Unknown and tainted, their pods are evicted when their toleration
// runs out, and the Deployment's replacements are scheduled on the nodes that
// still report.
func TestIntegrationNodeFailureReschedules(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", "--node-monitor-grace-period=4s")
	cs := s.Clientset(t)
	ctx := context.Background()
	// One node fails and three stay: NoExecute taints are rate-limited per
	// zone (0.1 nodes/s, as upstream), so a single failed node is tainted at
	// once while several would be spread over tens of seconds.
	kubelet := func(prefix string, n int) *harness.Process {
		return harness.StartHollowNodes(t, s, n, "--node-name-prefix", prefix, "--instance", prefix,
			// Renew well within the 4s grace period, as kubelets do within 40s.
			"--node-lease-renew-interval=1s")
	}
	doomed := kubelet("doomed-", 1)
	kubelet("steady-", 3)
	harness.Eventually(t, 30*time.Second, func() error {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready != 4 {
			return fmt.Errorf("%d of 4 nodes Ready", ready)
		}
		return nil
	})
	two := int64(2)
	replicas := int32(8)
	labels := map[string]string{"app": "survivor"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "survivor"}, Spec: appsv1.DeploymentSpec{
		Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "busybox"}},
			// Leave an unreachable node after 2s instead of the default 300s.
			Tolerations: []corev1.Toleration{
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &two},
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &two},
			},
		}},
	}}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	placement := func() (onDoomed, onSteady int, err error) {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=survivor"})
		if err != nil {
			return 0, 0, err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
				continue
			}
			switch {
			case strings.HasPrefix(p.Spec.NodeName, "doomed-"):
				onDoomed++
			case strings.HasPrefix(p.Spec.NodeName, "steady-"):
				onSteady++
			}
		}
		return onDoomed, onSteady, nil
	}
	var before int
	harness.Eventually(t, time.Minute, func() error {
		dd, ds, err := placement()
		if err != nil {
			return err
		}
		if dd+ds != 8 {
			return fmt.Errorf("%d of 8 pods Running", dd+ds)
		}
		before = dd
		return nil
	})
	if before == 0 {
		t.Fatal("the scheduler put no pod on the nodes about to fail; the test proves nothing")
	}
	t.Logf("%d of 8 pods run on the nodes about to fail; killing their kubelet", before)
	doomed.Kill()
	killed := time.Now()
	harness.Eventually(t, time.Minute, func() error {
		for _, name := range []string{"doomed-0"} {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			unknown, tainted := false, false
			for _, c := range n.Status.Conditions {
				unknown = unknown || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionUnknown)
			}
			for _, tn := range n.Spec.Taints {
				tainted = tainted || (tn.Key == corev1.TaintNodeUnreachable && tn.Effect == corev1.TaintEffectNoExecute)
			}
			if !unknown || !tainted {
				return fmt.Errorf("%s: Ready=Unknown %v, unreachable NoExecute taint %v", name, unknown, tainted)
			}
		}
		return nil
	})
	t.Logf("the failed node is Unknown and tainted %v after the kill", time.Since(killed))
	harness.Eventually(t, 2*time.Minute, func() error {
		dd, ds, err := placement()
		if err != nil {
			return err
		}
		if dd != 0 || ds != 8 {
			return fmt.Errorf("%d pods still on failed nodes, %d of 8 on the steady ones", dd, ds)
		}
		return nil
	})
	t.Logf("all 8 replicas Running on the steady nodes %v after the kill", time.Since(killed))
}

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/test/harness"
)

// TestIntegrationSimulatedNodes: `kubebus kubelet --simulate=100` registers
// 100 Ready nodes with renewing leases; a Deployment of 3,000 replicas goes
// the whole way: the controller-manager creates the pods, the scheduler binds
// them, the hollow kubelets report them Running; a deleted pod is finally
// deleted by its hollow kubelet and replaced.
func TestIntegrationSimulatedNodes(t *testing.T) {
	harness.SkipShort(t)
	const nodes, replicas = 100, 3000
	s := harness.StartServer(t, "")
	cs := s.Clientset(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Now()
	harness.StartHollowNodes(t, s, nodes)

	var names []string
	harness.Eventually(t, 60*time.Second, func() error {
		l, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		names = names[:0]
		for _, n := range l.Items {
			if !strings.HasPrefix(n.Name, "hollow-") {
				continue
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && c.Reason == "KubeletReady" {
					names = append(names, n.Name)
				}
			}
		}
		if len(names) != nodes {
			return fmt.Errorf("%d of %d hollow nodes are Ready", len(names), nodes)
		}
		return nil
	})
	t.Logf("%d hollow nodes Ready after %v", nodes, time.Since(t0).Round(time.Millisecond))
	n0, err := cs.CoreV1().Nodes().Get(ctx, "hollow-7", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := n0.Status.Capacity.Pods().Value(); got != 110 {
		t.Errorf("hollow-7 has capacity for %d pods, want 110", got)
	}
	if n0.Status.NodeInfo.KubeletVersion != "v1.33.0-kubebus" || n0.Labels["node.kubernetes.io/instance-type"] != "hollow" || n0.Labels["kubernetes.io/hostname"] != "hollow-7" {
		t.Errorf("hollow-7: nodeInfo %+v labels %v", n0.Status.NodeInfo, n0.Labels)
	}

	renewals := func() (map[string]time.Time, error) {
		l, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := map[string]time.Time{}
		for _, le := range l.Items {
			if le.Spec.RenewTime != nil && le.Spec.HolderIdentity != nil && *le.Spec.HolderIdentity == le.Name && *le.Spec.LeaseDurationSeconds == 40 {
				out[le.Name] = le.Spec.RenewTime.Time
			}
		}
		if len(out) != nodes {
			return nil, fmt.Errorf("%d of %d node leases are held", len(out), nodes)
		}
		return out, nil
	}
	var first map[string]time.Time
	harness.Eventually(t, 30*time.Second, func() (err error) { first, err = renewals(); return err })
	harness.Eventually(t, 30*time.Second, func() error {
		now, err := renewals()
		if err != nil {
			return err
		}
		stale := 0
		for n, t := range now {
			if !t.After(first[n]) {
				stale++
			}
		}
		if stale > 0 {
			return fmt.Errorf("%d of %d leases not renewed yet", stale, nodes)
		}
		return nil
	})
	t.Logf("all %d leases renewed", nodes)

	// The server's scheduler places the pods (no test-side binder).
	labels := map[string]string{"app": "hollow"}
	r := int32(replicas)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "hollow"}, Spec: appsv1.DeploymentSpec{
		Replicas: &r, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}},
	}}
	start := time.Now()
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 5*time.Minute, func() error {
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "hollow", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas != replicas {
			return fmt.Errorf("deployment: %d replicas, %d ready, %d available of %d", d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas, replicas)
		}
		return nil
	})
	t.Logf("Deployment of %d replicas available after %v", replicas, time.Since(start).Round(time.Millisecond))
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=hollow"})
	if err != nil {
		t.Fatal(err)
	}
	perNode, running := map[string]int{}, 0
	for _, p := range pods.Items {
		perNode[p.Spec.NodeName]++
		if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil {
			running++
		}
	}
	if running != replicas || len(perNode) != nodes {
		t.Errorf("%d pods Running on %d nodes, want %d on %d", running, len(perNode), replicas, nodes)
	}

	// A deleted pod: graceful deletion marks it, its hollow kubelet deletes
	// it for good, the ReplicaSet replaces it.
	victim := pods.Items[0]
	start = time.Now()
	if err := cs.CoreV1().Pods("default").Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		_, err := cs.CoreV1().Pods("default").Get(ctx, victim.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("pod %s still exists (err %v)", victim.Name, err)
	})
	t.Logf("pod %s deleted for good by its hollow kubelet after %v", victim.Name, time.Since(start).Round(time.Millisecond))
	before := map[string]bool{}
	for _, p := range pods.Items {
		before[p.Name] = true
	}
	harness.Eventually(t, 60*time.Second, func() error {
		l, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=hollow"})
		if err != nil {
			return err
		}
		fresh := 0
		for _, p := range l.Items {
			if !before[p.Name] && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" {
				fresh++
			}
		}
		if fresh != 1 || len(l.Items) != replicas {
			return fmt.Errorf("%d pods, %d new Running ones; want %d and 1", len(l.Items), fresh, replicas)
		}
		return nil
	})
	t.Logf("replacement available after %v", time.Since(start).Round(time.Millisecond))
}

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
	"github.com/kubebus/kubebus/test/prereq"
)

// TestIntegrationDrain: on hollow nodes, a Deployment of 3 whose pods all
// run on one node, guarded by a PodDisruptionBudget of minAvailable 2, is
// drained with the stock kubectl 1.32 and 1.33: kubectl cordons the node,
// evicts one pod, is answered 429 for the others until a replacement is
// Ready elsewhere, and finishes with every pod moved; a watch checks that
// fewer than 2 pods were never Ready. Also: an eviction of a pod no budget
// guards deletes it, and a budget of maxUnavailable 0 refuses with
// upstream's message.
func TestIntegrationDrain(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "")
	cs := s.Clientset(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const nodes = 3
	harness.StartHollowNodes(t, s, nodes)
	harness.Eventually(t, 60*time.Second, func() error {
		for i := range nodes {
			n, err := cs.CoreV1().Nodes().Get(ctx, fmt.Sprintf("hollow-%d", i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !drainNodeReady(n) {
				return fmt.Errorf("node %s is not Ready", n.Name)
			}
		}
		return nil
	})
	stock := harness.Kubectl(t)

	t.Run("evict without budget", func(t *testing.T) {
		const ns = "evict-free"
		drainNamespace(t, cs, ns)
		pod := drainPod("lonely", map[string]string{"app": "lonely"})
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitDrainPods(t, cs, ns, "app=lonely", 1)
		if err := evictPod(ctx, cs, ns, "lonely"); err != nil {
			t.Fatalf("evicting a pod without a budget: %v", err)
		}
		harness.Eventually(t, 30*time.Second, func() error {
			_, err := cs.CoreV1().Pods(ns).Get(ctx, "lonely", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("pod still there: %v", err)
		})
		if err := evictPod(ctx, cs, ns, "nobody"); !apierrors.IsNotFound(err) {
			t.Fatalf("evicting a missing pod: %v, want NotFound", err)
		}
	})

	t.Run("budget of maxUnavailable 0", func(t *testing.T) {
		const ns = "evict-zero"
		drainNamespace(t, cs, ns)
		labels := map[string]string{"app": "guarded"}
		drainDeployment(t, cs, ns, "guarded", 2, labels, nil)
		zero := intstr.FromInt32(0)
		drainBudget(t, cs, ns, "guarded", labels, nil, &zero)
		waitDrainPods(t, cs, ns, "app=guarded", 2)
		waitDrainBudget(t, cs, ns, "guarded", func(b *policyv1.PodDisruptionBudget) error {
			if b.Status.ExpectedPods != 2 || b.Status.CurrentHealthy != 2 || b.Status.DesiredHealthy != 2 || b.Status.DisruptionsAllowed != 0 {
				return fmt.Errorf("status %+v", b.Status)
			}
			return nil
		})
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=guarded"})
		if err != nil {
			t.Fatal(err)
		}
		err = evictPod(ctx, cs, ns, pods.Items[0].Name)
		if !apierrors.IsTooManyRequests(err) {
			t.Fatalf("evicting under maxUnavailable 0: %v, want 429", err)
		}
		if !strings.Contains(err.Error(), "Cannot evict pod as it would violate the pod's disruption budget.") ||
			!apierrors.HasStatusCause(err, policyv1.DisruptionBudgetCause) {
			t.Fatalf("429 says %q (%+v), want upstream's message and the DisruptionBudget cause", err, err.(apierrors.APIStatus).Status().Details)
		}
		out := s.MustRun(t, stock, "", "get", "pdb", "-n", ns)
		if !strings.Contains(out, "MIN AVAILABLE   MAX UNAVAILABLE   ALLOWED DISRUPTIONS   AGE") || !strings.Contains(out, "N/A             0                 0") {
			t.Fatalf("kubectl get pdb:\n%s", out)
		}
		// Leave no pod the budget pins to a node the drains below empty.
		if err := cs.AppsV1().Deployments(ns).Delete(ctx, "guarded", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, 60*time.Second, func() error {
			l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=guarded"})
			if err != nil {
				return err
			}
			if len(l.Items) > 0 {
				return fmt.Errorf("%d pods left", len(l.Items))
			}
			return nil
		})
	})

	for i, minor := range []string{"1.32", "1.33"} {
		t.Run("drain kubectl "+minor, func(t *testing.T) {
			bin := harness.PinnedKubectl(t, minor)
			if bin == "" {
				prereq.Missing(t, "kubectl.%s not found on PATH or beside the stock kubectl", minor)
			}
			drain(t, s, cs, bin, fmt.Sprintf("drain-%d", i), fmt.Sprintf("hollow-%d", i), nodes)
		})
	}
}

// drain runs the drain scenario in namespace ns against node target.
func drain(t *testing.T, s *harness.Server, cs kubernetes.Interface, bin, ns, target string, nodes int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	drainNamespace(t, cs, ns)
	// Only the target takes pods while the Deployment starts.
	var others []string
	for i := range nodes {
		if n := fmt.Sprintf("hollow-%d", i); n != target {
			others = append(others, n)
		}
	}
	for _, n := range others {
		s.MustRun(t, bin, "", "cordon", n)
	}
	labels := map[string]string{"app": ns}
	sel := "app=" + ns
	drainDeployment(t, cs, ns, "web", 3, labels, nil)
	pods := waitDrainPods(t, cs, ns, sel, 3)
	for _, p := range pods {
		if p.Spec.NodeName != target {
			t.Fatalf("pod %s runs on %s, want %s", p.Name, p.Spec.NodeName, target)
		}
	}
	for _, n := range others {
		s.MustRun(t, bin, "", "uncordon", n)
	}
	two := intstr.FromInt32(2)
	drainBudget(t, cs, ns, "web", labels, &two, nil)
	waitDrainBudget(t, cs, ns, "web", func(b *policyv1.PodDisruptionBudget) error {
		if b.Status.ObservedGeneration != b.Generation || b.Status.CurrentHealthy != 3 || b.Status.DesiredHealthy != 2 ||
			b.Status.ExpectedPods != 3 || b.Status.DisruptionsAllowed != 1 {
			return fmt.Errorf("status %+v", b.Status)
		}
		return nil
	})

	// Watch the pods from a list: never fewer than 2 Ready and not being
	// deleted.
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	low, lowAt := 3, ""
	ready := map[string]bool{}
	for _, p := range list.Items {
		ready[p.Name] = p.DeletionTimestamp == nil && drainPodReady(&p)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			mu.Lock()
			ready[p.Name] = ev.Type != watch.Deleted && p.DeletionTimestamp == nil && drainPodReady(p)
			n := 0
			for _, r := range ready {
				if r {
					n++
				}
			}
			if n < low {
				low, lowAt = n, fmt.Sprintf("%s %s", ev.Type, p.Name)
			}
			mu.Unlock()
		}
	}()

	start := time.Now()
	cmd := exec.Command(bin, "--kubeconfig", s.Kubeconfig, "drain", target, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=150s")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.Kubeconfig, "HOME="+s.Dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	took := time.Since(start)
	w.Stop()
	wg.Wait()
	out := stdout.String() + stderr.String()
	if err != nil {
		t.Fatalf("drain: %v\n%s", err, out)
	}
	t.Logf("drain took %v:\n%s", took.Round(time.Millisecond), out)
	for _, want := range []string{"node/" + target + " cordoned", "evicting pod " + ns + "/", "node/" + target + " drained",
		// kubectl was refused by the budget and tried again.
		`-n "` + ns + `" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.`} {
		if !strings.Contains(out, want) {
			t.Errorf("drain output lacks %q", want)
		}
	}
	mu.Lock()
	if low < 2 {
		t.Errorf("only %d pods were Ready at %s", low, lowAt)
	}
	mu.Unlock()
	n, err := cs.CoreV1().Nodes().Get(ctx, target, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !n.Spec.Unschedulable {
		t.Errorf("node %s is not cordoned", target)
	}
	after := waitDrainPods(t, cs, ns, sel, 3)
	for _, p := range after {
		if p.Spec.NodeName == target {
			t.Errorf("pod %s is still on %s", p.Name, target)
		}
	}
	s.MustRun(t, bin, "", "uncordon", target)
}

func drainNodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func drainPodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func drainNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The service account controller makes "default", which pods need.
	harness.Eventually(t, 30*time.Second, func() error {
		_, err := cs.CoreV1().ServiceAccounts(name).Get(context.Background(), "default", metav1.GetOptions{})
		return err
	})
}

func drainPod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}}
}

func drainDeployment(t *testing.T, cs kubernetes.Interface, ns, name string, replicas int32, labels map[string]string, nodeSelector map[string]string) {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{
		Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{NodeSelector: nodeSelector, Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}},
	}}
	if _, err := cs.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func drainBudget(t *testing.T, cs kubernetes.Interface, ns, name string, labels map[string]string, minAvailable, maxUnavailable *intstr.IntOrString) {
	t.Helper()
	b := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: policyv1.PodDisruptionBudgetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels}, MinAvailable: minAvailable, MaxUnavailable: maxUnavailable}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(context.Background(), b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitDrainBudget(t *testing.T, cs kubernetes.Interface, ns, name string, ok func(*policyv1.PodDisruptionBudget) error) {
	t.Helper()
	harness.Eventually(t, 60*time.Second, func() error {
		b, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return ok(b)
	})
}

// waitPodsReady waits until exactly n pods match sel, all Ready and none
// being deleted, and returns them.
func waitDrainPods(t *testing.T, cs kubernetes.Interface, ns, sel string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	harness.Eventually(t, 90*time.Second, func() error {
		l, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return err
		}
		ready := 0
		for _, p := range l.Items {
			if p.DeletionTimestamp == nil && drainPodReady(&p) {
				ready++
			}
		}
		if len(l.Items) != n || ready != n {
			return fmt.Errorf("%d pods, %d Ready, want %d", len(l.Items), ready, n)
		}
		pods = l.Items
		return nil
	})
	return pods
}

func evictPod(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
	return cs.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
}

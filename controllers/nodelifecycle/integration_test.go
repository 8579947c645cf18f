package nodelifecycle_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/controllers/nodelifecycle"
	"github.com/kubebus/kubebus/test/harness"
)

const (
	grace      = 2 * time.Second
	renewEvery = 200 * time.Millisecond
)

// kubelet is a fake kubelet: it renews its node's Lease until stopped.
type kubelet struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func startKubelet(cs kubernetes.Interface, node string) *kubelet {
	ctx, cancel := context.WithCancel(context.Background())
	k := &kubelet{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(k.done)
		tick := time.NewTicker(renewEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				leases := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
				if l, err := leases.Get(ctx, node, metav1.GetOptions{}); err == nil {
					l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
					_, _ = leases.Update(ctx, l, metav1.UpdateOptions{})
				}
			}
		}
	}()
	return k
}

func (k *kubelet) stop() { k.cancel(); <-k.done }

// postReady sets the node's Ready condition with a fresh heartbeat, as a
// kubelet does when it starts.
func postReady(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createNode(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	postReady(t, cs, name)
	secs := int32(40)
	if _, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &name, LeaseDurationSeconds: &secs,
			RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createPod(t *testing.T, cs kubernetes.Interface, name, node, ip string, tols ...corev1.Toleration) {
	t.Helper()
	ctx := context.Background()
	pod, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: node, Tolerations: tols,
			Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase, pod.Status.PodIP, pod.Status.PodIPs = corev1.PodRunning, ip, []corev1.PodIP{{IP: ip}}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func unreachable(secs *int64) corev1.Toleration {
	return corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs}
}

func getPod(t *testing.T, cs kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	pod, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// evicted reports whether the pod was deleted (it may linger, terminating,
// since no kubelet confirms).
func evicted(pod *corev1.Pod) bool { return pod == nil || pod.DeletionTimestamp != nil }

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func readyOf(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func TestIntegrationNodeLifecycle(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", "--disable-controller-manager", "--disable-scheduler", harness.NoServiceAccounts) // this test runs the controller under test itself
	cs := s.Clientset(t)
	ctx := context.Background()

	_, js := s.BusConnect(t, "system:kube-controller-manager")
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	inf, err := cache.New(cache.Config{JetStream: js, Component: "nodelifecycle-test", Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	recorder, stopRecorder := controllers.Recorder(runCtx, cs, "node-controller")
	ctrl, err := nodelifecycle.New(nodelifecycle.Config{
		Client: cs, Nodes: inf.Nodes, Leases: inf.NodeLeases, Pods: inf.Pods,
		GracePeriod: grace, StartupGracePeriod: grace, MonitorPeriod: 500 * time.Millisecond, EvictionRate: 100,
		Recorder: recorder, Options: controllers.Options{Logger: log},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &controllers.Manager{Client: cs, Lease: controllers.LeaseConfig{Disabled: true}, Logger: log}
	m.AddCache(inf)
	m.Add(ctrl)

	createNode(t, cs, "alive")
	createNode(t, cs, "dying")
	alive, dying := startKubelet(cs, "alive"), startKubelet(cs, "dying")
	t.Cleanup(alive.stop)
	t.Cleanup(dying.stop)
	four, zero := int64(4), int64(0)
	// The API server's DefaultTolerationSeconds admission gives every pod
	// 300s for unreachable nodes, as upstream's does; "bare" asks for none.
	createPod(t, cs, "bare", "dying", "10.244.1.2", unreachable(&zero))
	createPod(t, cs, "tolerant", "dying", "10.244.1.3", unreachable(&four))
	createPod(t, cs, "forever", "dying", "10.244.1.4", unreachable(nil))
	createPod(t, cs, "safe", "alive", "10.244.2.2")

	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		stopRecorder()
	})

	// Both kubelets renew for longer than the grace period: nothing happens.
	running := time.Now()
	harness.Eventually(t, 15*time.Second, func() error {
		l, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "dying", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l.Spec.RenewTime.Time.Before(running.Add(grace + time.Second)) {
			return fmt.Errorf("the lease was renewed at %v only", l.Spec.RenewTime.Time)
		}
		return nil
	})
	for _, name := range []string{"alive", "dying"} {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r := readyOf(n); r.Status != corev1.ConditionTrue || len(n.Spec.Taints) != 0 {
			t.Fatalf("node %s renewing its lease was touched: Ready=%s taints=%v", name, r.Status, n.Spec.Taints)
		}
	}

	dying.stop()
	last, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "dying", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stopped := last.Spec.RenewTime.Time
	var taintAdded time.Time
	harness.Eventually(t, 15*time.Second, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, "dying", metav1.GetOptions{})
		if err != nil {
			return err
		}
		r := readyOf(n)
		if r.Status != corev1.ConditionUnknown || r.Reason != nodelifecycle.ReasonNodeStatusUnknown || r.Message != nodelifecycle.MessageNodeStatusUnknown {
			return fmt.Errorf("Ready = %s (%s)", r.Status, r.Reason)
		}
		var noSched, noExec bool
		for _, tt := range n.Spec.Taints {
			noSched = noSched || tt.Key == corev1.TaintNodeUnreachable && tt.Effect == corev1.TaintEffectNoSchedule
			if tt.Key == corev1.TaintNodeUnreachable && tt.Effect == corev1.TaintEffectNoExecute && tt.TimeAdded != nil {
				noExec, taintAdded = true, tt.TimeAdded.Time
			}
		}
		if !noSched || !noExec {
			return fmt.Errorf("taints = %v", n.Spec.Taints)
		}
		return nil
	})
	if since := time.Since(stopped); since < grace {
		t.Fatalf("marked %v after the last renewal, before the %v grace period", since, grace)
	}
	t.Logf("marked unreachable %v after the last renewal", time.Since(stopped).Round(time.Millisecond))
	// The live node, watched as long, was left alone all along.
	if n, err := cs.CoreV1().Nodes().Get(ctx, "alive", metav1.GetOptions{}); err != nil || len(n.Spec.Taints) != 0 || readyOf(n).Status != corev1.ConditionTrue {
		t.Fatalf("the live node was touched: %v %v", n, err)
	}

	// The untolerated pod goes at once; the others are marked not ready.
	harness.Eventually(t, 10*time.Second, func() error {
		if p := getPod(t, cs, "bare"); !evicted(p) {
			return fmt.Errorf("bare is not evicted")
		}
		for _, name := range []string{"tolerant", "forever"} {
			if p := getPod(t, cs, name); p != nil && podReady(p) {
				return fmt.Errorf("%s is still ready", name)
			}
		}
		return nil
	})
	if p := getPod(t, cs, "bare"); p != nil {
		var marked bool
		for _, c := range p.Status.Conditions {
			marked = marked || c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue
		}
		if !marked {
			t.Errorf("bare has no DisruptionTarget condition: %+v", p.Status.Conditions)
		}
	}

	// The tolerant pod goes once its 4s from the taint's time ran out.
	harness.Eventually(t, 15*time.Second, func() error {
		if p := getPod(t, cs, "tolerant"); !evicted(p) {
			return fmt.Errorf("tolerant is not evicted")
		}
		return nil
	})
	if now := time.Now(); now.Before(taintAdded.Add(4 * time.Second)) {
		t.Fatalf("tolerant was evicted at %v, before its toleration ran out at %v", now, taintAdded.Add(4*time.Second))
	}
	if p := getPod(t, cs, "forever"); evicted(p) {
		t.Fatal("a pod that tolerates the taint forever was evicted")
	}
	if p := getPod(t, cs, "safe"); evicted(p) || !podReady(p) {
		t.Fatal("the pod on the live node was touched")
	}
	if n, err := cs.CoreV1().Nodes().Get(ctx, "alive", metav1.GetOptions{}); err != nil || len(n.Spec.Taints) != 0 || readyOf(n).Status != corev1.ConditionTrue {
		t.Fatalf("the live node was touched: %v %v", n, err)
	}
	harness.Eventually(t, 10*time.Second, func() error {
		evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == nodelifecycle.EventTaintManagerEviction && e.InvolvedObject.Name == "bare" {
				return nil
			}
		}
		return fmt.Errorf("no TaintManagerEviction event for bare among %d events", len(evs.Items))
	})

	// The kubelet comes back: it posts Ready and renews; the taints go.
	postReady(t, cs, "dying")
	back := startKubelet(cs, "dying")
	t.Cleanup(back.stop)
	harness.Eventually(t, 15*time.Second, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, "dying", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(n.Spec.Taints) != 0 {
			return fmt.Errorf("taints = %v", n.Spec.Taints)
		}
		return nil
	})
}

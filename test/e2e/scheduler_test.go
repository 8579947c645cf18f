package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
)

// schedNode creates a Ready node with the given allocatable cpu, labels
// and taints. No kubelet exists yet, so the test writes the status.
func schedNode(ctx context.Context, t *testing.T, cs kubernetes.Interface, name, cpu string, labels map[string]string, taints ...corev1.Taint) {
	t.Helper()
	res := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}
	n, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status = corev1.NodeStatus{Capacity: res, Allocatable: res, Conditions: []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
	}}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

type podOpt func(*corev1.Pod)

// schedPod creates a pod requesting cpu and returns it as created.
func schedPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, name, cpu string, opts ...podOpt) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
	for _, o := range opts {
		o(p)
	}
	created, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	return created
}

func withClass(name string) podOpt {
	return func(p *corev1.Pod) { p.Spec.PriorityClassName = name }
}

// wantPriority checks what priority admission resolved for a created pod.
func wantPriority(t *testing.T, p *corev1.Pod, class string, value int32) {
	t.Helper()
	if p.Spec.PriorityClassName != class || p.Spec.Priority == nil || *p.Spec.Priority != value ||
		p.Spec.PreemptionPolicy == nil || *p.Spec.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Fatalf("pod %s: priorityClassName %q priority %v preemptionPolicy %v; want %q, %d, PreemptLowerPriority",
			p.Name, p.Spec.PriorityClassName, p.Spec.Priority, p.Spec.PreemptionPolicy, class, value)
	}
}

func onNodes(key, value string) podOpt {
	return func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{key: value} }
}

// waitBound waits until pod is bound and returns its node.
func waitBound(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	var node string
	harness.Eventually(t, 30*time.Second, func() error {
		p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if node = p.Spec.NodeName; node == "" {
			return fmt.Errorf("pod %s is not bound", name)
		}
		return nil
	})
	return node
}

// waitEvent waits for an event with reason about pod whose message
// contains substr and returns it.
func waitEvent(ctx context.Context, t *testing.T, cs kubernetes.Interface, pod, reason, substr string) corev1.Event {
	t.Helper()
	var found corev1.Event
	harness.Eventually(t, 30*time.Second, func() error {
		evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var seen []string
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == pod && e.Reason == reason {
				seen = append(seen, e.Message)
				if strings.Contains(e.Message, substr) {
					found = e
					return nil
				}
			}
		}
		return fmt.Errorf("no %s event for %s containing %q (saw %q)", reason, pod, substr, seen)
	})
	return found
}

// stillPending checks that pod stays unbound for two seconds, watching it
// (from its current state) for any binding.
func stillPending(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	w, err := cs.CoreV1().Pods("default").Watch(wctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if p, ok := ev.Object.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			t.Fatalf("pod %s was bound to %s; want it pending", name, p.Spec.NodeName)
		}
	}
}

// bindWatch records every node each pod was seen on, to catch a pod bound
// twice or moved.
type bindWatch struct {
	mu    sync.Mutex
	nodes map[string]map[string]bool // pod UID -> nodes
}

func (b *bindWatch) run(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Error(err)
		return
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok || ev.Type == watch.Error || p.Spec.NodeName == "" {
			continue
		}
		b.mu.Lock()
		if b.nodes[string(p.UID)] == nil {
			b.nodes[string(p.UID)] = map[string]bool{}
		}
		b.nodes[string(p.UID)][p.Spec.NodeName] = true
		b.mu.Unlock()
	}
}

func (b *bindWatch) check(t *testing.T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for uid, nodes := range b.nodes {
		if len(nodes) > 1 {
			t.Errorf("pod %s was seen on %d nodes: %v", uid, len(nodes), nodes)
		}
	}
}

func TestIntegrationScheduler(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", "--disable-controller-manager", noServiceAccounts)
	cs := s.Clientset(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bw := &bindWatch{nodes: map[string]map[string]bool{}}
	go bw.run(ctx, t, cs)

	t.Run("fits and is bound", func(t *testing.T) {
		schedNode(ctx, t, cs, "basic-1", "4", map[string]string{"scenario": "basic"})
		schedPod(ctx, t, cs, "basic", "1", onNodes("scenario", "basic"))
		if node := waitBound(ctx, t, cs, "basic"); node != "basic-1" {
			t.Fatalf("bound to %s, want basic-1", node)
		}
		waitEvent(ctx, t, cs, "basic", "Scheduled", "Successfully assigned default/basic to basic-1")
	})

	t.Run("too big stays pending", func(t *testing.T) {
		schedPod(ctx, t, cs, "huge", "64")
		e := waitEvent(ctx, t, cs, "huge", "FailedScheduling", "Insufficient cpu")
		if e.Type != corev1.EventTypeWarning || e.Source.Component != "default-scheduler" {
			t.Errorf("event type %s from %q, want Warning from default-scheduler", e.Type, e.Source.Component)
		}
		harness.Eventually(t, 10*time.Second, func() error {
			p, err := cs.CoreV1().Pods("default").Get(ctx, "huge", metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && strings.Contains(c.Message, "Insufficient cpu") {
					return nil
				}
			}
			return fmt.Errorf("conditions %+v", p.Status.Conditions)
		})
		stillPending(ctx, t, cs, "huge")
	})

	t.Run("nodeSelector and taints steer", func(t *testing.T) {
		taint := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
		schedNode(ctx, t, cs, "steer-plain", "4", map[string]string{"scenario": "steer", "disk": "hdd"})
		schedNode(ctx, t, cs, "steer-ssd", "4", map[string]string{"scenario": "steer", "disk": "ssd"})
		schedNode(ctx, t, cs, "steer-tainted", "4", map[string]string{"scenario": "steer", "disk": "hdd", "gpu": "yes"}, taint)
		schedPod(ctx, t, cs, "wants-ssd", "100m", onNodes("disk", "ssd"))
		schedPod(ctx, t, cs, "wants-gpu-no-toleration", "100m", onNodes("gpu", "yes"))
		schedPod(ctx, t, cs, "wants-gpu", "100m", onNodes("gpu", "yes"), func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		})
		if n := waitBound(ctx, t, cs, "wants-ssd"); n != "steer-ssd" {
			t.Errorf("wants-ssd on %s", n)
		}
		if n := waitBound(ctx, t, cs, "wants-gpu"); n != "steer-tainted" {
			t.Errorf("wants-gpu on %s", n)
		}
		waitEvent(ctx, t, cs, "wants-gpu-no-toleration", "FailedScheduling", "untolerated taint")
		stillPending(ctx, t, cs, "wants-gpu-no-toleration")
		// Steered onto untainted hdd nodes only.
		for i := range 4 {
			schedPod(ctx, t, cs, fmt.Sprintf("hdd-%d", i), "100m", onNodes("disk", "hdd"))
		}
		for i := range 4 {
			if n := waitBound(ctx, t, cs, fmt.Sprintf("hdd-%d", i)); n != "steer-plain" {
				t.Errorf("hdd-%d on %s, want steer-plain", i, n)
			}
		}
	})

	t.Run("required anti-affinity spreads", func(t *testing.T) {
		for i := range 3 {
			schedNode(ctx, t, cs, fmt.Sprintf("anti-%d", i), "4", map[string]string{"scenario": "anti"})
		}
		anti := func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": "spread"}
			p.Spec.NodeSelector = map[string]string{"scenario": "anti"}
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
					TopologyKey:   corev1.LabelHostname,
				}},
			}}
		}
		// kubernetes.io/hostname is what the kubelet would label.
		for i := range 3 {
			n, err := cs.CoreV1().Nodes().Get(ctx, fmt.Sprintf("anti-%d", i), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			n.Labels[corev1.LabelHostname] = n.Name
			if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 4 {
			schedPod(ctx, t, cs, fmt.Sprintf("spread-%d", i), "100m", anti)
		}
		seen := map[string]bool{}
		pending := ""
		harness.Eventually(t, 30*time.Second, func() error {
			seen, pending = map[string]bool{}, ""
			for i := range 4 {
				p, err := cs.CoreV1().Pods("default").Get(ctx, fmt.Sprintf("spread-%d", i), metav1.GetOptions{})
				if err != nil {
					return err
				}
				if p.Spec.NodeName == "" {
					pending = p.Name
					continue
				}
				if seen[p.Spec.NodeName] {
					return fmt.Errorf("two spread pods on %s", p.Spec.NodeName)
				}
				seen[p.Spec.NodeName] = true
			}
			if len(seen) != 3 {
				return fmt.Errorf("%d of 4 bound, want 3", len(seen))
			}
			return nil
		})
		waitEvent(ctx, t, cs, pending, "FailedScheduling", "anti-affinity")
		stillPending(ctx, t, cs, pending)
	})

	t.Run("admission resolves priority and QoS", func(t *testing.T) {
		// No class and no global default: priority 0.
		wantPriority(t, schedPod(ctx, t, cs, "adm-plain", "100m", onNodes("scenario", "none")), "", 0)
		// The built-in classes exist and resolve to their fixed values.
		wantPriority(t, schedPod(ctx, t, cs, "adm-node-critical", "100m", onNodes("scenario", "none"), withClass("system-node-critical")),
			"system-node-critical", 2000001000)
		wantPriority(t, schedPod(ctx, t, cs, "adm-cluster-critical", "100m", onNodes("scenario", "none"), withClass("system-cluster-critical")),
			"system-cluster-critical", 2000000000)
		// A class unknown to the API server is refused, as upstream.
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "adm-bad-class"}, Spec: corev1.PodSpec{
			PriorityClassName: "no-such-class", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		_, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "no PriorityClass with name no-such-class was found") {
			t.Fatalf("creating a pod with an unknown class: err %v, want 403 naming the class", err)
		}
		// So is a priority the pod sets itself that the class disagrees with.
		p = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "adm-self-priority"}, Spec: corev1.PodSpec{
			PriorityClassName: "system-cluster-critical", Priority: new(int32(5)), Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		_, err = cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "the integer value of priority (5) must not be provided in pod spec") {
			t.Fatalf("creating a pod with its own priority: err %v, want 403", err)
		}
		// QoS classes are set in status at create.
		guaranteed := func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
		}
		bestEffort := func(p *corev1.Pod) { p.Spec.Containers[0].Resources = corev1.ResourceRequirements{} }
		for name, tc := range map[string]struct {
			opts []podOpt
			want corev1.PodQOSClass
		}{
			"adm-burstable":   {want: corev1.PodQOSBurstable},
			"adm-guaranteed":  {opts: []podOpt{guaranteed}, want: corev1.PodQOSGuaranteed},
			"adm-best-effort": {opts: []podOpt{bestEffort}, want: corev1.PodQOSBestEffort},
		} {
			created := schedPod(ctx, t, cs, name, "100m", append(tc.opts, onNodes("scenario", "none"))...)
			got, err := cs.CoreV1().Pods("default").Get(ctx, created.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if created.Status.QOSClass != tc.want || got.Status.QOSClass != tc.want {
				t.Errorf("%s: qosClass %q at create, %q stored; want %q", name, created.Status.QOSClass, got.Status.QOSClass, tc.want)
			}
		}
	})

	t.Run("high priority preempts", func(t *testing.T) {
		for name, value := range map[string]int32{"high": 1000, "low": 10} {
			if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
				ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value,
			}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		schedNode(ctx, t, cs, "prio-1", "2", map[string]string{"scenario": "prio"})
		wantPriority(t, schedPod(ctx, t, cs, "low", "1500m", onNodes("scenario", "prio"), withClass("low")), "low", 10)
		waitBound(ctx, t, cs, "low")
		// Admission resolves the class; the pod does not set spec.priority.
		wantPriority(t, schedPod(ctx, t, cs, "high", "1500m", onNodes("scenario", "prio"), withClass("high")), "high", 1000)
		// The victim is deleted gracefully; with no kubelet, the test
		// finishes the deletion as the kubelet would.
		harness.Eventually(t, 30*time.Second, func() error {
			p, err := cs.CoreV1().Pods("default").Get(ctx, "low", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.DeletionTimestamp == nil {
				return fmt.Errorf("victim not being deleted")
			}
			return nil
		})
		harness.Eventually(t, 10*time.Second, func() error {
			p, err := cs.CoreV1().Pods("default").Get(ctx, "high", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Status.NominatedNodeName != "prio-1" && p.Spec.NodeName == "" {
				return fmt.Errorf("nominatedNodeName %q", p.Status.NominatedNodeName)
			}
			return nil
		})
		zero := int64(0)
		if err := cs.CoreV1().Pods("default").Delete(ctx, "low", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		if n := waitBound(ctx, t, cs, "high"); n != "prio-1" {
			t.Fatalf("high on %s", n)
		}
		waitEvent(ctx, t, cs, "high", "Scheduled", "prio-1")
	})

	// No pod was ever seen on two nodes.
	bw.check(t)
	evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scheduled := map[string]int{}
	for _, e := range evs.Items {
		if e.Reason == "Scheduled" {
			scheduled[e.InvolvedObject.Name] += int(max(e.Count, 1))
		}
	}
	for pod, n := range scheduled {
		if n > 1 {
			t.Errorf("pod %s has %d Scheduled events", pod, n)
		}
	}
}

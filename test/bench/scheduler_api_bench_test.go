package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
)

// BenchmarkSchedulerAPI: the all-in-one server (its scheduler in process,
// talking to its API server over HTTPS) with N Node objects; 32 clients
// create M pending pods. Pods bound per second is measured from the first
// create to the last binding seen by a watch started before the creates,
// as upstream's SchedulingBasic workload (nodes with 4 cpu, 32Gi, 110 pods;
// pods requesting 100m and 500Mi). The benchmark fails if any pod is bound
// twice or moved, or if the API server accepted more bindings than pods.
func BenchmarkSchedulerAPI(b *testing.B) {
	for _, size := range []struct{ nodes, pods int }{{500, 5000}, {5000, 10000}} {
		b.Run(fmt.Sprintf("nodes=%d/pods=%d", size.nodes, size.pods), func(b *testing.B) {
			schedulerAPI(b, size.nodes, size.pods)
		})
	}
}

func schedulerAPI(b *testing.B, nodes, pods int) {
	const clients, ns = 32, "sched-bench"
	var rates, createRates []float64
	for iter := 0; iter < b.N; iter++ {
		b.StopTimer()
		s := harness.StartServer(b, "", "--disable-controller-manager", "--disable-admission-plugins=ServiceAccount")
		cfg := s.RESTConfig(b)
		cfg.QPS, cfg.Burst = -1, 0
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		createNodes(ctx, b, cs, nodes, clients)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		waitSchedulerSeesNode(ctx, b, cs, fmt.Sprintf("sched-node-%05d", nodes-1))

		w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan bindResult, 1)
		go func() { done <- followBindings(w.ResultChan(), pods) }()

		b.StartTimer()
		start := time.Now()
		var next atomic.Int64
		var wg sync.WaitGroup
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= pods {
						return
					}
					if _, err := cs.CoreV1().Pods(ns).Create(ctx, schedPod(i), metav1.CreateOptions{}); err != nil {
						b.Errorf("creating pod %d: %v", i, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		created := time.Since(start)
		var res bindResult
		select {
		case res = <-done:
		case <-time.After(10 * time.Minute):
			b.Fatal("pods not all bound after 10 minutes")
		}
		b.StopTimer()
		w.Stop()
		if res.err != nil {
			b.Fatal(res.err)
		}
		elapsed := res.last.Sub(start)
		rates = append(rates, float64(pods)/elapsed.Seconds())
		createRates = append(createRates, float64(pods)/created.Seconds())
		// Exactly one accepted binding per pod (the probe pod has one too).
		if got := int(s.APIRequests(b, `resource="pods"`, `subresource="binding"`, `code="201"`)); got != pods+1 {
			b.Fatalf("the API server accepted %d bindings for %d pods", got, pods+1)
		}
		cancel()
		s.Stop(b)
	}
	b.ReportMetric(median(rates), "pods-bound/s")
	b.ReportMetric(median(createRates), "creates/s")
	b.ReportMetric(0, "ns/op")
}

// schedNodeObject is upstream scheduler_perf's node-default: 4 cpu, 32Gi,
// 110 pods, Ready.
func schedNodeObject(i int) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}
	name := fmt.Sprintf("sched-node-%05d", i)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res, Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}}},
	}
}

// schedPod is upstream scheduler_perf's pod-default: one container
// requesting 100m cpu and 500Mi memory.
func schedPod(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sched-%06d", i)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "pause", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("500Mi"),
			}},
		}}},
	}
}

// createNodes creates n Ready nodes with `clients` concurrent writers.
func createNodes(ctx context.Context, b *testing.B, cs kubernetes.Interface, n, clients int) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Bool
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || failed.Load() {
					return
				}
				node := schedNodeObject(i)
				status := node.Status
				created, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
				if err == nil {
					created.Status = status
					_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
				}
				if err != nil {
					failed.Store(true)
					b.Errorf("creating node %d: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		b.FailNow()
	}
}

// waitSchedulerSeesNode binds a probe pod to node through the scheduler:
// once it is bound, the scheduler leads and its cache holds every node
// created before node.
func waitSchedulerSeesNode(ctx context.Context, b *testing.B, cs kubernetes.Interface, node string) {
	b.Helper()
	probe := schedPod(0)
	probe.Name = "probe"
	probe.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	harness.Eventually(b, 5*time.Minute, func() error {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "probe", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Spec.NodeName != node {
			return fmt.Errorf("probe pod not bound to %s yet", node)
		}
		return nil
	})
}

type bindResult struct {
	last time.Time // when the last pod was seen bound
	err  error
}

// followBindings reads pod events until n pods are bound and checks that
// no pod's spec.nodeName ever changes once set.
func followBindings(events <-chan watch.Event, n int) bindResult {
	node := map[string]string{}
	for ev := range events {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			if ev.Type == watch.Error {
				return bindResult{err: fmt.Errorf("watch error: %v", ev.Object)}
			}
			continue
		}
		prev, seen := node[p.Name]
		switch {
		case ev.Type == watch.Deleted:
			return bindResult{err: fmt.Errorf("pod %s was deleted", p.Name)}
		case seen && p.Spec.NodeName != prev:
			return bindResult{err: fmt.Errorf("pod %s moved from %s to %q", p.Name, prev, p.Spec.NodeName)}
		case !seen && p.Spec.NodeName != "":
			node[p.Name] = p.Spec.NodeName
			if len(node) == n {
				return bindResult{last: time.Now()}
			}
		}
	}
	return bindResult{err: fmt.Errorf("the watch ended with %d of %d pods bound", len(node), n)}
}

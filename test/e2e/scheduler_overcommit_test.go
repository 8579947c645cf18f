package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
)

// gpu is the extended resource of the randomized workload.
const gpu corev1.ResourceName = "example.com/gpu"

// fitResources are the resources the overcommit check sums per node.
var fitResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, gpu}

// testSeed returns $KUBEBUS_TEST_SEED, or a fresh seed; the test logs it
// so a failure can be replayed.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	if v := os.Getenv("KUBEBUS_TEST_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("KUBEBUS_TEST_SEED: %v", err)
		}
		return seed
	}
	return uint64(time.Now().UnixNano())
}

// randomNode returns a Ready node of random size; about a third have GPUs.
func randomNode(rng *rand.Rand, i int) *corev1.Node {
	pick := func(vs ...int64) int64 { return vs[rng.IntN(len(vs))] }
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(pick(2, 4, 8, 16, 32), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(pick(4, 8, 16, 32, 64)<<30, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(40+rng.Int64N(111), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity((10+rng.Int64N(41))<<30, resource.BinarySI),
	}
	if rng.IntN(3) == 0 {
		alloc[gpu] = *resource.NewQuantity(pick(1, 2, 4, 8), resource.DecimalSI)
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rand-%02d", i), Labels: map[string]string{corev1.LabelHostname: fmt.Sprintf("rand-%02d", i)}},
		Status: corev1.NodeStatus{Capacity: alloc, Allocatable: alloc, Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}}},
	}
}

// randomRequests returns random requests: each resource is left out at
// times, and a pod may request nothing at all.
func randomRequests(rng *rand.Rand, scale int64) corev1.ResourceList {
	r := corev1.ResourceList{}
	if rng.IntN(4) != 0 {
		r[corev1.ResourceCPU] = *resource.NewMilliQuantity(scale*(10+rng.Int64N(391)), resource.DecimalSI)
	}
	if rng.IntN(4) != 0 {
		r[corev1.ResourceMemory] = *resource.NewQuantity(scale*(16+rng.Int64N(497))<<20, resource.BinarySI)
	}
	if rng.IntN(5) == 0 {
		r[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(scale*(100+rng.Int64N(1949))<<20, resource.BinarySI)
	}
	return r
}

// randomPod returns a pod with random requests: some request nothing, some
// request GPUs (requests equal limits, as for any extended resource), some
// have an init container that asks for more than the app containers.
func randomPod(rng *rand.Rand, i int) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w-%04d", i)}}
	if rng.IntN(20) == 0 { // best effort
		p.Spec.Containers = []corev1.Container{{Name: "app", Image: "busybox"}}
		return p
	}
	for c := range 1 + rng.IntN(2) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprintf("app-%d", c), Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: randomRequests(rng, 1)}})
	}
	if rng.IntN(50) == 0 {
		n := *resource.NewQuantity(1+rng.Int64N(2), resource.DecimalSI)
		res := &p.Spec.Containers[0].Resources
		res.Requests[gpu], res.Limits = n, corev1.ResourceList{gpu: n}
	}
	if rng.IntN(10) == 0 {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: randomRequests(rng, 4)}}}
	}
	return p
}

// podRequests is what a pod takes from its node, computed here as upstream
// does: for each resource, the larger of the containers' sum and the
// largest init container, plus the pod overhead.
func podRequests(p *corev1.Pod) map[corev1.ResourceName]*resource.Quantity {
	out := map[corev1.ResourceName]*resource.Quantity{}
	for _, name := range fitResources {
		sum := resource.Quantity{}
		for _, c := range p.Spec.Containers {
			if q, ok := c.Resources.Requests[name]; ok {
				sum.Add(q)
			}
		}
		for _, c := range p.Spec.InitContainers {
			if q, ok := c.Resources.Requests[name]; ok && q.Cmp(sum) > 0 {
				sum = q.DeepCopy()
			}
		}
		if q, ok := p.Spec.Overhead[name]; ok {
			sum.Add(q)
		}
		out[name] = &sum
	}
	return out
}

// unschedulable reports whether the scheduler marked the pod unschedulable.
func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// TestIntegrationSchedulerNeverOvercommits: a seeded random workload of
// 5,000 pods (random cpu, memory and ephemeral-storage requests, some with
// none, some with GPUs, some with larger init containers) on 50 nodes of
// random sizes, more than the cluster holds. Once every pod is bound or
// marked unschedulable, no node holds pods whose requests, summed by the
// test from the API's pod list, exceed its allocatable cpu, memory,
// ephemeral storage, GPUs or pod count.
func TestIntegrationSchedulerNeverOvercommits(t *testing.T) {
	harness.SkipShort(t)
	const (
		ns        = "overcommit"
		nodeCount = 50
		podCount  = 5000
	)
	seed := testSeed(t)
	t.Logf("seed %d (set KUBEBUS_TEST_SEED to replay)", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	s := harness.StartServer(t, "", "--disable-controller-manager", noServiceAccounts)
	cfg := s.RESTConfig(t)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	alloc := map[string]corev1.ResourceList{}
	for i := range nodeCount {
		n := randomNode(rng, i)
		status := n.Status
		created, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status = status
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		alloc[n.Name] = status.Allocatable
	}
	workload := make([]*corev1.Pod, podCount)
	for i := range workload {
		workload[i] = randomPod(rng, i)
	}

	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= podCount {
					return
				}
				if _, err := cs.CoreV1().Pods(ns).Create(ctx, workload[i], metav1.CreateOptions{}); err != nil {
					t.Errorf("creating pod %s: %v", workload[i].Name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("created %d pods in %v", podCount, time.Since(start).Round(time.Millisecond))

	// Wait until every pod is bound or marked unschedulable.
	var pods []corev1.Pod
	deadline := time.Now().Add(3 * time.Minute)
	for {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods = list.Items
		undecided := 0
		for i := range pods {
			if pods[i].Spec.NodeName == "" && !unschedulable(&pods[i]) {
				undecided++
			}
		}
		if len(pods) == podCount && undecided == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 3m, %d of %d pods are neither bound nor unschedulable", undecided, len(pods))
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
	t.Logf("every pod decided %v after the first create", time.Since(start).Round(time.Millisecond))

	// Sum, per node, what its pods request.
	used := map[string]map[corev1.ResourceName]*resource.Quantity{}
	count := map[string]int64{}
	bound, pending := 0, 0
	reasons := map[string]int{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" {
			pending++
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled {
					for _, part := range []string{"Insufficient cpu", "Insufficient memory", "Insufficient ephemeral-storage", "Insufficient " + string(gpu), "Too many pods"} {
						if strings.Contains(c.Message, part) {
							reasons[part]++
						}
					}
				}
			}
			continue
		}
		bound++
		if _, ok := alloc[p.Spec.NodeName]; !ok {
			t.Errorf("pod %s bound to unknown node %q", p.Name, p.Spec.NodeName)
			continue
		}
		if used[p.Spec.NodeName] == nil {
			used[p.Spec.NodeName] = map[corev1.ResourceName]*resource.Quantity{}
			for _, name := range fitResources {
				used[p.Spec.NodeName][name] = &resource.Quantity{}
			}
		}
		for name, q := range podRequests(p) {
			used[p.Spec.NodeName][name].Add(*q)
		}
		count[p.Spec.NodeName]++
	}
	names := make([]string, 0, len(alloc))
	for n := range alloc {
		names = append(names, n)
	}
	sort.Strings(names)
	full := 0
	for _, n := range names {
		a := alloc[n]
		if most := a.Pods().Value(); count[n] > most {
			t.Errorf("node %s holds %d pods, allocatable %d", n, count[n], most)
		}
		var pct []string
		for _, name := range fitResources {
			u := &resource.Quantity{}
			if used[n] != nil {
				u = used[n][name]
			}
			limit := a[name] // zero when the node does not have it
			if u.Cmp(limit) > 0 {
				t.Errorf("node %s: pods request %s of %s, allocatable %s", n, u.String(), name, limit.String())
			}
			if !limit.IsZero() {
				pct = append(pct, fmt.Sprintf("%s %.0f%%", name, 100*float64(u.MilliValue())/float64(limit.MilliValue())))
			}
		}
		if count[n] == a.Pods().Value() {
			full++
		}
		t.Logf("node %s: %d/%d pods, %s", n, count[n], a.Pods().Value(), strings.Join(pct, ", "))
	}
	t.Logf("%d bound, %d unschedulable (reasons named: %v); %d nodes full by pod count", bound, pending, reasons, full)
	// The workload is bigger than the cluster: the check above must have
	// been exercised against full nodes.
	if pending == 0 {
		t.Errorf("no pod was left unschedulable; the workload did not fill the cluster (seed %d)", seed)
	}
	if bound == 0 {
		t.Errorf("no pod was bound (seed %d)", seed)
	}
}

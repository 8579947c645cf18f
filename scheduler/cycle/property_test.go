package cycle

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
)

// independentRequests recomputes what a pod needs without the framework:
// containers and sidecars summed, raised to the largest init container
// plus the sidecars before it.
func independentRequests(pod *v1.Pod) map[v1.ResourceName]int64 {
	val := func(l v1.ResourceList, n v1.ResourceName) int64 {
		q, ok := l[n]
		if !ok {
			return 0
		}
		if n == v1.ResourceCPU {
			return q.MilliValue()
		}
		return q.Value()
	}
	names := []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, "example.com/gpu"}
	out := map[v1.ResourceName]int64{}
	for _, n := range names {
		var sum, sidecars, initMax int64
		for _, c := range pod.Spec.Containers {
			sum += val(c.Resources.Requests, n)
		}
		for _, c := range pod.Spec.InitContainers {
			r := val(c.Resources.Requests, n)
			if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
				sum += r
				sidecars += r
				initMax = max(initMax, sidecars)
			} else {
				initMax = max(initMax, r+sidecars)
			}
		}
		out[n] = max(sum, initMax)
	}
	return out
}

func randomNode(r *rand.Rand, i int) *v1.Node {
	c := map[string]string{
		"cpu":               fmt.Sprint(2 + r.IntN(15)),
		"memory":            fmt.Sprintf("%dGi", 4+r.IntN(61)),
		"pods":              fmt.Sprint(10 + r.IntN(100)),
		"ephemeral-storage": fmt.Sprintf("%dGi", 10+r.IntN(90)),
	}
	if r.IntN(4) == 0 {
		c["example.com/gpu"] = fmt.Sprint(r.IntN(5))
	}
	n := ft.MakeNode(fmt.Sprintf("node-%03d", i)).Capacity(c).Label(v1.LabelTopologyZone, fmt.Sprintf("z%d", i%3))
	if r.IntN(10) == 0 {
		n.Taint("dedicated", "x", v1.TaintEffectNoSchedule)
	}
	return n.Obj()
}

func randomPod(r *rand.Rand, i int) *v1.Pod {
	p := ft.MakePod(fmt.Sprintf("pod-%05d", i)).Priority(int32(r.IntN(5))).Label("app", fmt.Sprintf("app-%d", r.IntN(20)))
	req := map[string]string{}
	if r.IntN(5) > 0 { // a fifth request nothing
		req["cpu"] = fmt.Sprintf("%dm", r.IntN(2000))
		req["memory"] = fmt.Sprintf("%dMi", r.IntN(4096))
	}
	if r.IntN(3) == 0 {
		req["ephemeral-storage"] = fmt.Sprintf("%dGi", r.IntN(5))
	}
	if r.IntN(10) == 0 {
		req["example.com/gpu"] = fmt.Sprint(1 + r.IntN(2))
	}
	p.Req(req)
	if r.IntN(5) == 0 {
		p.InitReq(map[string]string{"cpu": fmt.Sprintf("%dm", r.IntN(4000)), "memory": fmt.Sprintf("%dMi", r.IntN(2048))})
	}
	if r.IntN(8) == 0 {
		p.SidecarReq(map[string]string{"cpu": fmt.Sprintf("%dm", r.IntN(500))})
	}
	if r.IntN(6) == 0 {
		p.Container("side", map[string]string{"memory": fmt.Sprintf("%dMi", r.IntN(512))})
	}
	if r.IntN(10) == 0 {
		p.Toleration("dedicated", v1.TolerationOpExists, "", "")
	}
	if r.IntN(15) == 0 {
		p.NodeSelector(v1.LabelTopologyZone, fmt.Sprintf("z%d", r.IntN(3)))
	}
	if r.IntN(20) == 0 {
		p.HostPort("", v1.ProtocolTCP, int32(8000+r.IntN(5)))
	}
	return p.Obj()
}

// TestNeverExceedsAllocatable schedules 5,000 random pods one by one into
// a snapshot of random nodes, assuming each placement and carrying out
// preemption plans, and checks after every step that no node holds more
// than its allocatable, recomputed from the pods' specs.
func TestNeverExceedsAllocatable(t *testing.T) {
	t.Parallel()
	const numNodes, numPods = 100, 5000
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	nodes := make([]*v1.Node, numNodes)
	for i := range nodes {
		nodes[i] = randomNode(r, i)
	}
	snap := framework.NewSnapshot(nodes, nil, nil)
	p := defaultProfile(t)
	opts := Options{Choose: SeededChooser(3), Parallelism: 4}
	placed := map[string][]*v1.Pod{}
	var scheduled, unschedulable, preempted int

	check := func(node string) {
		t.Helper()
		var n *v1.Node
		for _, x := range nodes {
			if x.Name == node {
				n = x
			}
		}
		used := map[v1.ResourceName]int64{}
		for _, pod := range placed[node] {
			for k, v := range independentRequests(pod) {
				used[k] += v
			}
		}
		for name, u := range used {
			q, ok := n.Status.Allocatable[name]
			var alloc int64
			if ok {
				alloc = q.Value()
				if name == v1.ResourceCPU {
					alloc = q.MilliValue()
				}
			}
			if u > alloc {
				t.Fatalf("node %s: %s used %d > allocatable %d", node, name, u, alloc)
			}
		}
		if pods := n.Status.Allocatable[v1.ResourcePods]; int64(len(placed[node])) > pods.Value() {
			t.Fatalf("node %s: %d pods > %d", node, len(placed[node]), pods.Value())
		}
	}
	assume := func(pod *v1.Pod, node string) {
		pod.Spec.NodeName = node
		snap.AddPod(pod)
		placed[node] = append(placed[node], pod)
		check(node)
	}

	for i := range numPods {
		pod := randomPod(r, i)
		res, err := Schedule(ctx, p, snap, pod, opts)
		opts.StartIndex = res.NextStartIndex
		var fe *framework.FitError
		switch {
		case err == nil:
			scheduled++
			assume(pod, res.Node)
		case errors.As(err, &fe):
			unschedulable++
			if res.Preemption == nil {
				continue
			}
			// Carry out the plan, then the pod must fit on its nominated node.
			node := res.Preemption.NominatedNode
			for _, v := range res.Preemption.Victims {
				if framework.PodPriority(v) >= framework.PodPriority(pod) {
					t.Fatalf("victim %s has priority %d >= preemptor's %d", v.Name, framework.PodPriority(v), framework.PodPriority(pod))
				}
				snap.RemovePod(v)
				kept := placed[node][:0]
				for _, q := range placed[node] {
					if q.UID != v.UID {
						kept = append(kept, q)
					}
				}
				placed[node] = kept
			}
			pod.Status.NominatedNodeName = node
			res2, err := Schedule(ctx, p, snap, pod, opts)
			if err != nil || res2.Node != node {
				t.Fatalf("after preempting for %s on %s: %q %v", pod.Name, node, res2.Node, err)
			}
			preempted++
			assume(pod, node)
		default:
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		check(n.Name)
		ni := snap.Get(n.Name)
		if ni.Requested.MilliCPU > ni.Allocatable.MilliCPU || ni.Requested.Memory > ni.Allocatable.Memory ||
			ni.Requested.EphemeralStorage > ni.Allocatable.EphemeralStorage || len(ni.Pods) > ni.Allocatable.AllowedPodNumber ||
			ni.Requested.ScalarResources["example.com/gpu"] > ni.Allocatable.ScalarResources["example.com/gpu"] {
			t.Fatalf("node %s accounting: requested %+v allocatable %+v", n.Name, ni.Requested, ni.Allocatable)
		}
	}
	t.Logf("%d pods: %d scheduled, %d unschedulable (%d by preemption)", numPods, scheduled, unschedulable, preempted)
	if scheduled < numPods/10 || unschedulable == 0 || preempted == 0 {
		t.Fatalf("workload too easy or too hard: %d scheduled, %d unschedulable, %d preempted", scheduled, unschedulable, preempted)
	}
}

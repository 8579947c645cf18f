package preemption

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
	"github.com/kubebus/kubebus/scheduler/plugins/interpodaffinity"
	"github.com/kubebus/kubebus/scheduler/plugins/nodeports"
	"github.com/kubebus/kubebus/scheduler/plugins/noderesources"
	"github.com/kubebus/kubebus/scheduler/plugins/tainttoleration"
)

type res = map[string]string

func profile(t *testing.T) *framework.Profile {
	t.Helper()
	fit, err := noderesources.New(noderesources.FitArgs{})
	if err != nil {
		t.Fatal(err)
	}
	ipa, err := interpodaffinity.New(interpodaffinity.Args{})
	if err != nil {
		t.Fatal(err)
	}
	tt := tainttoleration.New()
	np := nodeports.New()
	return &framework.Profile{
		PreFilter:  []framework.PreFilterPlugin{np, fit, ipa},
		Filter:     []framework.FilterPlugin{tt, np, fit, ipa},
		Preemption: &framework.PreemptionArgs{MinCandidateNodesPercentage: 10, MinCandidateNodesAbsolute: 100},
	}
}

func node(name, cpu string) *v1.Node {
	return ft.MakeNode(name).Capacity(res{"cpu": cpu, "memory": "8Gi", "pods": "10"}).Obj()
}

func pod(name, nodeName string, prio int32, cpu string) *v1.Pod {
	p := ft.MakePod(name).Priority(prio).Req(res{"cpu": cpu})
	if nodeName != "" {
		p.Node(nodeName)
	}
	return p.Obj()
}

// run filters pod on every node, as a cycle would, and preempts.
func run(t *testing.T, p *framework.Profile, snap *framework.Snapshot, preemptor *v1.Pod, opts Options) (Result, *framework.Status) {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	diag := framework.Diagnosis{NodeToStatus: map[string]*framework.Status{}}
	if _, s, _ := p.RunPreFilter(ctx, state, preemptor, snap); !s.IsSuccess() {
		if !s.IsRejected() {
			t.Fatal(s)
		}
		diag.AbsentNodesStatus = s
	} else {
		for _, ni := range snap.NodeInfos() {
			s := p.RunFilterWithNominatedPods(ctx, state, preemptor, ni, snap)
			if s.IsSuccess() {
				t.Fatalf("pod fits on %s; nothing to preempt", ni.Name())
			}
			diag.NodeToStatus[ni.Name()] = s
		}
	}
	if opts.Args == (framework.PreemptionArgs{}) {
		opts.Args = *p.Preemption
	}
	return Preempt(ctx, p, snap, preemptor, state, &diag, opts)
}

func victimNames(r Result) string {
	var out []string
	for _, v := range r.Victims {
		out = append(out, v.Name)
	}
	return strings.Join(out, ",")
}

func TestPreempt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		nodes     []*v1.Node
		existing  []*v1.Pod
		preemptor *v1.Pod
		node      string
		victims   string
		message   string // when no plan
	}{
		{name: "evicts the one lowest-priority pod that is enough",
			nodes:     []*v1.Node{node("a", "3")},
			existing:  []*v1.Pod{pod("p1", "a", 1, "1"), pod("p2", "a", 2, "1"), pod("p3", "a", 3, "1")},
			preemptor: pod("x", "", 10, "1"),
			node:      "a", victims: "p1"},
		{name: "evicts as many as needed, highest priority first",
			nodes:     []*v1.Node{node("a", "3")},
			existing:  []*v1.Pod{pod("p1", "a", 1, "1"), pod("p2", "a", 2, "1"), pod("p3", "a", 3, "1")},
			preemptor: pod("x", "", 10, "2"),
			node:      "a", victims: "p2,p1"},
		{name: "equal priority pods are not victims",
			nodes:     []*v1.Node{node("a", "2")},
			existing:  []*v1.Pod{pod("p1", "a", 10, "1"), pod("p2", "a", 10, "1")},
			preemptor: pod("x", "", 10, "1"),
			message:   "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."},
		{name: "only lower-priority pods count, and they are not enough",
			nodes:     []*v1.Node{node("a", "2")},
			existing:  []*v1.Pod{pod("p1", "a", 1, "1"), pod("p2", "a", 20, "1")},
			preemptor: pod("x", "", 10, "2"),
			message:   "preemption: 0/1 nodes are available: 1 Insufficient cpu."},
		{name: "prefers the node whose highest victim priority is lowest",
			nodes:     []*v1.Node{node("a", "1"), node("b", "1")},
			existing:  []*v1.Pod{pod("pa", "a", 5, "1"), pod("pb", "b", 3, "1")},
			preemptor: pod("x", "", 10, "1"),
			node:      "b", victims: "pb"},
		{name: "then the fewest victims",
			nodes:     []*v1.Node{node("a", "2"), node("b", "2")},
			existing:  []*v1.Pod{pod("a1", "a", 3, "1"), pod("a2", "a", 3, "1"), pod("b1", "b", 3, "2")},
			preemptor: pod("x", "", 10, "2"),
			node:      "b", victims: "b1"},
		{name: "then the latest-started victims",
			nodes: []*v1.Node{node("a", "1"), node("b", "1")},
			existing: []*v1.Pod{
				ft.MakePod("old").Node("a").Priority(3).Req(res{"cpu": "1"}).StartTime(100).Obj(),
				ft.MakePod("new").Node("b").Priority(3).Req(res{"cpu": "1"}).StartTime(200).Obj(),
			},
			preemptor: pod("x", "", 10, "1"),
			node:      "b", victims: "new"},
		{name: "nodes where eviction cannot help are left out",
			nodes:     []*v1.Node{node("small", "1"), ft.MakeNode("tainted").Taint("k", "v", v1.TaintEffectNoSchedule).Obj()},
			existing:  []*v1.Pod{pod("p1", "small", 1, "1"), pod("p2", "tainted", 1, "1")},
			preemptor: pod("x", "", 10, "4"),
			message:   "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."},
		{name: "preemptionPolicy Never",
			nodes:     []*v1.Node{node("a", "1")},
			existing:  []*v1.Pod{pod("p1", "a", 1, "1")},
			preemptor: ft.MakePod("x").Priority(10).Req(res{"cpu": "1"}).PreemptNever().Obj(),
			message:   "preemption: not eligible due to preemptionPolicy=Never."},
		{name: "evicting a pod the preemptor is anti-affine to",
			nodes:    []*v1.Node{node("a", "4")},
			existing: []*v1.Pod{ft.MakePod("web").Node("a").Priority(1).Label("app", "web").Obj(), pod("other", "a", 1, "1")},
			preemptor: ft.MakePod("x").Priority(10).
				PodAntiAffinity(ft.Term(v1.LabelHostname, map[string]string{"app": "web"})).Obj(),
			node: "a", victims: "web"},
		{name: "evicting a pod that holds a host port",
			nodes:     []*v1.Node{node("a", "4")},
			existing:  []*v1.Pod{ft.MakePod("web").Node("a").Priority(1).HostPort("", v1.ProtocolTCP, 80).Obj(), pod("other", "a", 0, "1")},
			preemptor: ft.MakePod("x").Priority(10).HostPort("", v1.ProtocolTCP, 80).Obj(),
			node:      "a", victims: "web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			snap := framework.NewSnapshot(tt.nodes, tt.existing, nil)
			r, s := run(t, profile(t), snap, tt.preemptor, Options{})
			if tt.message != "" {
				if s.Code() != framework.Unschedulable || s.Message() != tt.message {
					t.Fatalf("got %v, want %q", s, tt.message)
				}
				return
			}
			if !s.IsSuccess() {
				t.Fatal(s)
			}
			if r.NominatedNode != tt.node || victimNames(r) != tt.victims {
				t.Fatalf("got %s [%s], want %s [%s]", r.NominatedNode, victimNames(r), tt.node, tt.victims)
			}
			// The snapshot is untouched.
			if got := len(snap.Get(r.NominatedNode).Pods); got != countOn(tt.existing, r.NominatedNode) {
				t.Fatalf("snapshot changed: %d pods on %s", got, r.NominatedNode)
			}
		})
	}
}

func countOn(pods []*v1.Pod, node string) int {
	n := 0
	for _, p := range pods {
		if p.Spec.NodeName == node {
			n++
		}
	}
	return n
}

func TestPDB(t *testing.T) {
	t.Parallel()
	nodes := []*v1.Node{node("a", "1"), node("b", "1")}
	existing := []*v1.Pod{
		ft.MakePod("guarded").Node("a").Priority(1).Label("app", "db").Req(res{"cpu": "1"}).Obj(),
		ft.MakePod("free").Node("b").Priority(2).Label("app", "web").Req(res{"cpu": "1"}).Obj(),
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0},
	}
	snap := framework.NewSnapshot(nodes, existing, nil)
	r, s := run(t, profile(t), snap, pod("x", "", 10, "1"), Options{PDBs: []*policyv1.PodDisruptionBudget{pdb}})
	if !s.IsSuccess() || r.NominatedNode != "b" || r.NumPDBViolations != 0 {
		t.Fatalf("got %+v %v, want b without violations (despite the higher priority victim)", r, s)
	}
	// Without the budget the lower-priority pod goes.
	r, s = run(t, profile(t), snap, pod("x", "", 10, "1"), Options{})
	if !s.IsSuccess() || r.NominatedNode != "a" {
		t.Fatalf("got %+v %v", r, s)
	}
	// When violating is the only way, it is done and counted.
	only := framework.NewSnapshot(nodes[:1], existing[:1], nil)
	r, s = run(t, profile(t), only, pod("x", "", 10, "1"), Options{PDBs: []*policyv1.PodDisruptionBudget{pdb}})
	if !s.IsSuccess() || r.NominatedNode != "a" || r.NumPDBViolations != 1 {
		t.Fatalf("got %+v %v", r, s)
	}
}

func TestNotEligibleWhileVictimsTerminate(t *testing.T) {
	t.Parallel()
	now := metav1.Unix(1, 0)
	terminating := pod("victim", "a", 1, "1")
	terminating.DeletionTimestamp = &now
	terminating.Status.Conditions = []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonPreemptionByScheduler}}
	snap := framework.NewSnapshot([]*v1.Node{node("a", "1")}, []*v1.Pod{terminating}, nil)
	x := pod("x", "", 10, "1")
	x.Status.NominatedNodeName = "a"
	_, s := run(t, profile(t), snap, x, Options{})
	if s.Message() != "preemption: "+MsgTerminating {
		t.Fatalf("got %v", s)
	}
}

func TestClearLowerNominations(t *testing.T) {
	t.Parallel()
	snap := framework.NewSnapshot([]*v1.Node{node("a", "1")}, []*v1.Pod{pod("p1", "a", 1, "1")}, nil)
	lower := pod("lower", "", 5, "100m")
	snap.AddNominatedPod(lower, "a")
	r, s := run(t, profile(t), snap, pod("x", "", 10, "1"), Options{})
	if !s.IsSuccess() || len(r.ClearNominated) != 1 || r.ClearNominated[0].Name != "lower" {
		t.Fatalf("got %+v %v", r, s)
	}
}

func TestCandidateLimitAndOffset(t *testing.T) {
	t.Parallel()
	var nodes []*v1.Node
	var existing []*v1.Pod
	for _, n := range []string{"a", "b", "c", "d"} {
		nodes = append(nodes, node(n, "1"))
		existing = append(existing, pod("p-"+n, n, 1, "1"))
	}
	snap := framework.NewSnapshot(nodes, existing, nil)
	// One candidate is enough; the offset decides which node is tried first.
	for offset, want := range map[int]string{0: "a", 1: "b", 3: "d", 6: "c"} {
		r, s := run(t, profile(t), snap, pod("x", "", 10, "1"), Options{Offset: offset,
			Args: framework.PreemptionArgs{MinCandidateNodesPercentage: 0, MinCandidateNodesAbsolute: 1}})
		if !s.IsSuccess() || r.NominatedNode != want {
			t.Errorf("offset %d: got %s %v, want %s", offset, r.NominatedNode, s, want)
		}
	}
}

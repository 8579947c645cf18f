package cycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/scheduler/config"
	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
)

type res = map[string]string

func profileFrom(t testing.TB, yaml string) *framework.Profile {
	t.Helper()
	c := config.Default()
	if yaml != "" {
		var err error
		if c, err = config.Load([]byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" + yaml)); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := c.BuildProfiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		return p
	}
	t.Fatal("no profile")
	return nil
}

func defaultProfile(t testing.TB) *framework.Profile { return profileFrom(t, "") }

func fitError(t *testing.T, err error) *framework.FitError {
	t.Helper()
	var fe *framework.FitError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v is not a FitError", err)
	}
	return fe
}

func TestNumFeasibleNodesToFind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		percentage int32
		nodes      int
		want       int
	}{
		{0, 10, 10},
		{0, 99, 99},
		{0, 100, 100},
		{0, 1000, 420},  // 50 - 1000/125 = 42%
		{0, 5000, 500},  // 10%
		{0, 6000, 300},  // 2%, floored to 5%
		{0, 10000, 500}, // 5%
		{30, 1000, 300}, // configured
		{10, 500, 100},  // at least 100
		{100, 5000, 5000},
		{50, 50, 50}, // small clusters: all
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d%%-of-%d", tt.percentage, tt.nodes), func(t *testing.T) {
			t.Parallel()
			if got := NumFeasibleNodesToFind(tt.percentage, tt.nodes); got != tt.want {
				t.Fatalf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func manyNodes(n int) []*v1.Node {
	nodes := make([]*v1.Node, n)
	for i := range nodes {
		nodes[i] = ft.MakeNode(fmt.Sprintf("n%04d", i)).Obj()
	}
	return nodes
}

func TestPercentageOfNodesToScore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := profileFrom(t, "percentageOfNodesToScore: 10\n")
	snap := framework.NewSnapshot(manyNodes(1000), nil, nil)
	pod := ft.MakePod("p").Req(res{"cpu": "1"}).Obj()

	r, err := Schedule(ctx, p, snap, pod, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.FeasibleNodes != 100 || r.EvaluatedNodes != 100 || r.NextStartIndex != 100 {
		t.Fatalf("feasible %d, evaluated %d, next %d; want 100, 100, 100", r.FeasibleNodes, r.EvaluatedNodes, r.NextStartIndex)
	}
	if r.Node >= "n0100" {
		t.Fatalf("chose %s, outside the first 100 nodes", r.Node)
	}
	r2, err := Schedule(ctx, p, snap, pod, Options{StartIndex: r.NextStartIndex})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Node < "n0100" || r2.Node >= "n0200" || r2.NextStartIndex != 200 {
		t.Fatalf("second cycle chose %s, next %d", r2.Node, r2.NextStartIndex)
	}
	// Wrapping around the end.
	r3, err := Schedule(ctx, p, snap, pod, Options{StartIndex: 950})
	if err != nil {
		t.Fatal(err)
	}
	if r3.NextStartIndex != 50 {
		t.Fatalf("next %d after wrapping, want 50", r3.NextStartIndex)
	}
	// Infeasible nodes are counted as evaluated.
	cordoned := manyNodes(1000)
	for i := 0; i < 1000; i += 2 {
		cordoned[i].Spec.Unschedulable = true
	}
	r4, err := Schedule(ctx, p, framework.NewSnapshot(cordoned, nil, nil), pod, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r4.FeasibleNodes != 100 || r4.EvaluatedNodes != 200 {
		t.Fatalf("feasible %d evaluated %d, want 100 and 200", r4.FeasibleNodes, r4.EvaluatedNodes)
	}
}

func TestDeterminism(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := defaultProfile(t)
	run := func(parallelism int, seed uint64) []string {
		snap := framework.NewSnapshot(manyNodes(300), nil, nil)
		opts := Options{Parallelism: parallelism, Choose: SeededChooser(seed)}
		var out []string
		for i := range 200 {
			pod := ft.MakePod(fmt.Sprintf("p%d", i)).Req(res{"cpu": "100m", "memory": "100Mi"}).Obj()
			r, err := Schedule(ctx, p, snap, pod, opts)
			if err != nil {
				t.Fatal(err)
			}
			opts.StartIndex = r.NextStartIndex
			pod.Spec.NodeName = r.Node
			snap.AddPod(pod)
			out = append(out, r.Node)
		}
		return out
	}
	a, b := run(1, 7), run(1, 7)
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Fatal("same inputs gave different placements")
	}
	if c := run(8, 7); strings.Join(a, ",") != strings.Join(c, ",") {
		t.Fatal("parallel filtering and scoring changed the placements")
	}
	if d := run(1, 8); strings.Join(a, ",") == strings.Join(d, ",") {
		t.Fatal("another seed gave the same placements")
	}
}

func TestTieBreaking(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := defaultProfile(t)
	snap := framework.NewSnapshot(manyNodes(5), nil, nil)
	pod := ft.MakePod("p").Obj()
	r, err := Schedule(ctx, p, snap, pod, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Node != "n0000" {
		t.Fatalf("nil chooser picked %s, want the first node", r.Node)
	}
	r, _ = Schedule(ctx, p, snap, pod, Options{StartIndex: 2})
	if r.Node != "n0002" {
		t.Fatalf("nil chooser from index 2 picked %s", r.Node)
	}
	var offered int
	r, _ = Schedule(ctx, p, snap, pod, Options{Choose: func(n int) int { offered = n; return n - 1 }})
	if offered != 5 || r.Node != "n0004" {
		t.Fatalf("chooser offered %d nodes and %s was picked", offered, r.Node)
	}
}

func TestFitErrorMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	high := int32(1000)
	nodes := []*v1.Node{
		ft.MakeNode("a").Capacity(res{"cpu": "2", "memory": "4Gi", "pods": "10"}).Obj(),
		ft.MakeNode("b").Capacity(res{"cpu": "2", "memory": "4Gi", "pods": "10"}).Obj(),
		ft.MakeNode("c").Capacity(res{"cpu": "8", "memory": "4Gi", "pods": "10"}).Taint("key", "value", v1.TaintEffectNoSchedule).Obj(),
	}
	existing := []*v1.Pod{
		ft.MakePod("e1").Node("a").Priority(high).Req(res{"cpu": "1500m"}).Obj(),
		ft.MakePod("e2").Node("b").Priority(high).Req(res{"cpu": "1500m"}).Obj(),
	}
	pod := ft.MakePod("p").Req(res{"cpu": "1"}).Obj()
	tests := []struct {
		name string
		yaml string
		pod  *v1.Pod
		want string
	}{
		{"with preemption", "", pod,
			"0/3 nodes are available: 1 node(s) had untolerated taint {key: value}, 2 Insufficient cpu. " +
				"preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."},
		{"without preemption", "profiles:\n- plugins:\n    postFilter:\n      disabled:\n      - name: DefaultPreemption\n", pod,
			"0/3 nodes are available: 1 node(s) had untolerated taint {key: value}, 2 Insufficient cpu."},
		{"preemptionPolicy Never", "", ft.MakePod("p").Req(res{"cpu": "1"}).PreemptNever().Obj(),
			"0/3 nodes are available: 1 node(s) had untolerated taint {key: value}, 2 Insufficient cpu. " +
				"preemption: not eligible due to preemptionPolicy=Never."},
		{"several reasons on one node", "", ft.MakePod("p").Req(res{"cpu": "1", "memory": "5Gi"}).Obj(),
			"0/3 nodes are available: 1 node(s) had untolerated taint {key: value}, 2 Insufficient cpu, 2 Insufficient memory. " +
				"preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."},
		{"PreFilter rejection", "", ft.MakePod("p").RequiredNodeAffinity(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{
			{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: []string{"a"}},
			{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: []string{"b"}},
		}}).Obj(),
			"0/3 nodes are available: pod affinity terms conflict. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."},
		{"PreFilter narrowing", "", ft.MakePod("p").Req(res{"cpu": "1"}).RequiredNodeAffinity(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{
			{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: []string{"a"}},
		}}).Obj(),
			"0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. " +
				"preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			snap := framework.NewSnapshot(nodes, existing, nil)
			r, err := Schedule(ctx, profileFrom(t, tt.yaml), snap, tt.pod, Options{})
			fe := fitError(t, err)
			if got := fe.Error(); got != tt.want {
				t.Fatalf("message\n got %q\nwant %q", got, tt.want)
			}
			if r.Node != "" || r.Preemption != nil {
				t.Fatalf("result %+v", r)
			}
			if fe.NumAllNodes != 3 {
				t.Fatalf("NumAllNodes %d", fe.NumAllNodes)
			}
		})
	}
}

func TestUnschedulablePlugins(t *testing.T) {
	t.Parallel()
	snap := framework.NewSnapshot([]*v1.Node{
		ft.MakeNode("a").Capacity(res{"cpu": "1", "pods": "10"}).Obj(),
		ft.MakeNode("b").Unschedulable().Obj(),
	}, nil, nil)
	_, err := Schedule(context.Background(), defaultProfile(t), snap, ft.MakePod("p").Req(res{"cpu": "2"}).Obj(), Options{})
	fe := fitError(t, err)
	got := fe.Diagnosis.UnschedulablePlugins
	if got.Len() != 2 || !got.Has("NodeResourcesFit") || !got.Has("NodeUnschedulable") {
		t.Fatalf("unschedulable plugins %v", got)
	}
}

func TestNoNodes(t *testing.T) {
	t.Parallel()
	_, err := Schedule(context.Background(), defaultProfile(t), framework.NewSnapshot(nil, nil, nil), ft.MakePod("p").Obj(), Options{})
	if !errors.Is(err, framework.ErrNoNodesAvailable) {
		t.Fatalf("err = %v", err)
	}
}

func TestScoringPicksTheBestNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes := []*v1.Node{
		ft.MakeNode("busy").Obj(),
		ft.MakeNode("idle").Obj(),
		ft.MakeNode("avoid").Taint("soft", "", v1.TaintEffectPreferNoSchedule).Obj(),
	}
	busy := ft.MakePod("x").Node("busy").Req(res{"cpu": "16", "memory": "32Gi"}).Obj()
	snap := framework.NewSnapshot(nodes, []*v1.Pod{busy}, nil)
	r, err := Schedule(ctx, defaultProfile(t), snap, ft.MakePod("p").Req(res{"cpu": "1", "memory": "1Gi"}).Obj(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Node != "idle" || r.FeasibleNodes != 3 {
		t.Fatalf("chose %s of %d", r.Node, r.FeasibleNodes)
	}
}

func TestImageLocalityByConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const gb = 1 << 30
	nodes := []*v1.Node{
		ft.MakeNode("a").Obj(),
		ft.MakeNode("b").Obj(),
		ft.MakeNode("c").Image(2*gb, "docker.io/library/big:1").Obj(),
	}
	// c holds the image but is busier: only ImageLocality makes it win.
	existing := []*v1.Pod{ft.MakePod("x").Node("c").Req(res{"cpu": "2", "memory": "4Gi"}).Obj()}
	pod := ft.MakePod("p").Image("big:1").Req(res{"cpu": "1", "memory": "1Gi"}).Obj()
	with, err := Schedule(ctx, defaultProfile(t), framework.NewSnapshot(nodes, existing, nil), pod, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if with.Node != "c" {
		t.Fatalf("with ImageLocality chose %s, want c (holds the image)", with.Node)
	}
	off := profileFrom(t, "profiles:\n- plugins:\n    score:\n      disabled:\n      - name: ImageLocality\n")
	without, err := Schedule(ctx, off, framework.NewSnapshot(nodes, existing, nil), pod, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if without.Node == "c" {
		t.Fatal("without ImageLocality still chose the busier node holding the image")
	}
}

func TestNominatedNodeFirst(t *testing.T) {
	t.Parallel()
	snap := framework.NewSnapshot(manyNodes(3), nil, nil)
	pod := ft.MakePod("p").Obj()
	pod.Status.NominatedNodeName = "n0002"
	r, err := Schedule(context.Background(), defaultProfile(t), snap, pod, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Node != "n0002" || r.EvaluatedNodes != 1 {
		t.Fatalf("chose %s after %d nodes", r.Node, r.EvaluatedNodes)
	}
}

func TestNominatedPodsKeepTheirRoom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes := []*v1.Node{
		ft.MakeNode("a").Capacity(res{"cpu": "2", "pods": "10"}).Obj(),
		ft.MakeNode("b").Capacity(res{"cpu": "2", "pods": "10"}).Obj(),
	}
	snap := framework.NewSnapshot(nodes, []*v1.Pod{ft.MakePod("x").Node("b").Req(res{"cpu": "1500m"}).Obj()}, nil)
	nominated := ft.MakePod("big").Priority(100).Req(res{"cpu": "2"}).Obj()
	snap.AddNominatedPod(nominated, "a")

	low := ft.MakePod("low").Priority(10).Req(res{"cpu": "1"}).Obj()
	_, err := Schedule(ctx, defaultProfile(t), snap, low, Options{})
	fe := fitError(t, err)
	if !strings.HasPrefix(fe.Error(), "0/2 nodes are available: 2 Insufficient cpu.") {
		t.Fatalf("message %q", fe.Error())
	}
	// An equal-or-higher priority pod is not held back by a lower nomination.
	higher := ft.MakePod("higher").Priority(200).Req(res{"cpu": "1"}).Obj()
	r, err := Schedule(ctx, defaultProfile(t), snap, higher, Options{})
	if err != nil || r.Node != "a" {
		t.Fatalf("higher-priority pod: %v %v", r.Node, err)
	}
	// The nominated pod itself fits on its node.
	r, err = Schedule(ctx, defaultProfile(t), snap, nominated, Options{})
	if err != nil || r.Node != "a" {
		t.Fatalf("nominated pod: %v %v", r.Node, err)
	}
}

func TestPreemptionPlan(t *testing.T) {
	t.Parallel()
	nodes := []*v1.Node{ft.MakeNode("a").Capacity(res{"cpu": "2", "pods": "10"}).Obj()}
	existing := []*v1.Pod{
		ft.MakePod("low1").Node("a").Priority(1).Req(res{"cpu": "1"}).Obj(),
		ft.MakePod("low2").Node("a").Priority(2).Req(res{"cpu": "1"}).Obj(),
	}
	snap := framework.NewSnapshot(nodes, existing, nil)
	r, err := Schedule(context.Background(), defaultProfile(t), snap, ft.MakePod("high").Priority(100).Req(res{"cpu": "1"}).Obj(), Options{})
	fe := fitError(t, err)
	if fe.Diagnosis.PostFilterMsg != "" {
		t.Fatalf("post-filter message %q", fe.Diagnosis.PostFilterMsg)
	}
	if r.Preemption == nil || r.Preemption.NominatedNode != "a" || len(r.Preemption.Victims) != 1 || r.Preemption.Victims[0].Name != "low1" {
		t.Fatalf("plan %+v", r.Preemption)
	}
}

// The scenarios, on the pure cycle.
func TestScenarios(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := defaultProfile(t)
	place := func(snap *framework.Snapshot, pod *v1.Pod) (string, error) {
		r, err := Schedule(ctx, p, snap, pod, Options{})
		if err == nil {
			pod.Spec.NodeName = r.Node
			snap.AddPod(pod)
		}
		return r.Node, err
	}

	t.Run("anti-affinity spreads three replicas and leaves the fourth pending", func(t *testing.T) {
		snap := framework.NewSnapshot(manyNodes(3), nil, nil)
		seen := map[string]bool{}
		for i := range 4 {
			pod := ft.MakePod(fmt.Sprintf("web-%d", i)).Label("app", "web").
				PodAntiAffinity(ft.Term(v1.LabelHostname, map[string]string{"app": "web"})).Obj()
			node, err := place(snap, pod)
			if i < 3 {
				if err != nil || seen[node] {
					t.Fatalf("replica %d: %q %v", i, node, err)
				}
				seen[node] = true
				continue
			}
			fe := fitError(t, err)
			want := "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
			if fe.Error() != want {
				t.Fatalf("4th replica: %q", fe.Error())
			}
		}
	})
	t.Run("nodeSelector, node affinity and taints steer pods", func(t *testing.T) {
		snap := framework.NewSnapshot([]*v1.Node{
			ft.MakeNode("ssd").Label("disk", "ssd").Obj(),
			ft.MakeNode("hdd").Label("disk", "hdd").Obj(),
			ft.MakeNode("gpu").Label("disk", "ssd").Taint("gpu", "true", v1.TaintEffectNoSchedule).Obj(),
		}, nil, nil)
		for i := range 5 {
			if n, err := place(snap, ft.MakePod(fmt.Sprintf("s%d", i)).NodeSelector("disk", "ssd").Obj()); err != nil || n != "ssd" {
				t.Fatalf("nodeSelector: %s %v", n, err)
			}
			if n, err := place(snap, ft.MakePod(fmt.Sprintf("h%d", i)).RequiredNodeAffinity(ft.Expr("disk", v1.NodeSelectorOpNotIn, "ssd")).Obj()); err != nil || n != "hdd" {
				t.Fatalf("affinity: %s %v", n, err)
			}
			if n, err := place(snap, ft.MakePod(fmt.Sprintf("g%d", i)).NodeSelector("disk", "ssd").
				Toleration("gpu", v1.TolerationOpExists, "", v1.TaintEffectNoSchedule).
				PreferredNodeAffinity(100, ft.Expr(v1.LabelHostname, v1.NodeSelectorOpIn, "gpu")).Obj()); err != nil || n != "gpu" {
				t.Fatalf("toleration: %s %v", n, err)
			}
		}
	})
	t.Run("a pod bigger than every node stays pending", func(t *testing.T) {
		snap := framework.NewSnapshot(manyNodes(3), nil, nil)
		_, err := place(snap, ft.MakePod("huge").Req(res{"cpu": "64"}).Obj())
		fe := fitError(t, err)
		want := "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
		if fe.Error() != want {
			t.Fatalf("%q", fe.Error())
		}
	})
}

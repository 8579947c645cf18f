package podtopologyspread

import (
	"context"
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
)

const (
	host = v1.LabelHostname
	zone = v1.LabelTopologyZone
)

var web = map[string]string{"app": "web"}

func nodes() []*v1.Node {
	return []*v1.Node{
		ft.MakeNode("a").Label(zone, "z1").Obj(),
		ft.MakeNode("b").Label(zone, "z1").Obj(),
		ft.MakeNode("c").Label(zone, "z2").Obj(),
		ft.MakeNode("nozone").Obj(),
	}
}

func webPod(name, node string) *v1.Pod { return ft.MakePod(name).Label("app", "web").Node(node).Obj() }

func mustNew(t *testing.T, args Args) *PodTopologySpread {
	t.Helper()
	pl, err := New(args)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func TestFilter(t *testing.T) {
	t.Parallel()
	U, UU, OK := framework.Unschedulable, framework.UnschedulableAndUnresolvable, framework.Success
	dns := v1.DoNotSchedule
	two := []*v1.Pod{webPod("w1", "a"), webPod("w2", "a")}
	ignore, honor := v1.NodeInclusionPolicyIgnore, v1.NodeInclusionPolicyHonor
	three := int32(3)
	tests := []struct {
		name     string
		pod      *v1.Pod
		nodes    []*v1.Node
		existing []*v1.Pod
		want     map[string]framework.Code
	}{
		{name: "no constraints",
			pod: ft.MakePod("p").Obj(), existing: two,
			want: map[string]framework.Code{"a": OK, "b": OK, "c": OK, "nozone": OK}},
		{name: "zone maxSkew 1",
			pod: ft.MakePod("p").Label("app", "web").Spread(1, zone, dns, web).Obj(), existing: two,
			want: map[string]framework.Code{"a": U, "b": U, "c": OK, "nozone": UU}},
		{name: "zone maxSkew 3 allows the skew",
			pod: ft.MakePod("p").Label("app", "web").Spread(3, zone, dns, web).Obj(), existing: two,
			want: map[string]framework.Code{"a": OK, "b": OK, "c": OK, "nozone": UU}},
		{name: "hostname maxSkew 1",
			pod: ft.MakePod("p").Label("app", "web").Spread(1, host, dns, web).Obj(), existing: two,
			want: map[string]framework.Code{"a": U, "b": OK, "c": OK, "nozone": OK}},
		{name: "pod not matching its own selector counts 0 for itself",
			pod: ft.MakePod("p").Spread(2, host, dns, web).Obj(), existing: two,
			want: map[string]framework.Code{"a": OK, "b": OK, "c": OK, "nozone": OK}},
		{name: "two constraints must both hold",
			pod: ft.MakePod("p").Label("app", "web").Spread(1, host, dns, web).Spread(1, zone, dns, web).Obj(), existing: two,
			want: map[string]framework.Code{"a": U, "b": U, "c": OK, "nozone": UU}},
		{name: "minDomains above the domain count makes the minimum 0",
			pod: func() *v1.Pod {
				p := ft.MakePod("p").Label("app", "web").Spread(1, zone, dns, web).Obj()
				p.Spec.TopologySpreadConstraints[0].MinDomains = &three
				return p
			}(),
			existing: []*v1.Pod{webPod("w1", "a"), webPod("w2", "c")},
			want:     map[string]framework.Code{"a": U, "b": U, "c": U, "nozone": UU}},
		{name: "without minDomains the same placement passes",
			pod:      ft.MakePod("p").Label("app", "web").Spread(1, zone, dns, web).Obj(),
			existing: []*v1.Pod{webPod("w1", "a"), webPod("w2", "c")},
			want:     map[string]framework.Code{"a": OK, "b": OK, "c": OK, "nozone": UU}},
		{name: "nodeAffinityPolicy Honor counts only nodes matching the pod's selector",
			pod: ft.MakePod("p").Label("app", "web").NodeSelector(zone, "z1").Spread(1, zone, dns, web).Obj(), existing: two,
			want: map[string]framework.Code{"a": OK, "b": OK}},
		{name: "nodeAffinityPolicy Ignore counts every node",
			pod: func() *v1.Pod {
				p := ft.MakePod("p").Label("app", "web").NodeSelector(zone, "z1").Spread(1, zone, dns, web).Obj()
				p.Spec.TopologySpreadConstraints[0].NodeAffinityPolicy = &ignore
				return p
			}(),
			existing: two,
			want:     map[string]framework.Code{"a": U, "b": U}},
		{name: "nodeTaintsPolicy Honor leaves out tainted nodes",
			pod: func() *v1.Pod {
				p := ft.MakePod("p").Label("app", "web").Spread(1, zone, dns, web).Obj()
				p.Spec.TopologySpreadConstraints[0].NodeTaintsPolicy = &honor
				return p
			}(),
			nodes: []*v1.Node{
				ft.MakeNode("a").Label(zone, "z1").Obj(),
				ft.MakeNode("c").Label(zone, "z2").Taint("k", "v", v1.TaintEffectNoSchedule).Obj(),
			},
			existing: []*v1.Pod{webPod("w1", "a")},
			want:     map[string]framework.Code{"a": OK}},
		{name: "nodeTaintsPolicy Ignore counts tainted nodes",
			pod: ft.MakePod("p").Label("app", "web").Spread(1, zone, dns, web).Obj(),
			nodes: []*v1.Node{
				ft.MakeNode("a").Label(zone, "z1").Obj(),
				ft.MakeNode("c").Label(zone, "z2").Taint("k", "v", v1.TaintEffectNoSchedule).Obj(),
			},
			existing: []*v1.Pod{webPod("w1", "a")},
			want:     map[string]framework.Code{"a": U}},
		{name: "pods in other namespaces do not count",
			pod:      ft.MakePod("p").Label("app", "web").Spread(1, host, dns, web).Obj(),
			existing: []*v1.Pod{ft.MakePod("w1").Namespace("other").Label("app", "web").Node("a").Obj()},
			want:     map[string]framework.Code{"a": OK}},
		{name: "terminating pods do not count",
			pod: ft.MakePod("p").Label("app", "web").Spread(1, host, dns, web).Obj(),
			existing: func() []*v1.Pod {
				p := webPod("w1", "a")
				now := metav1.Unix(1, 0)
				p.DeletionTimestamp = &now
				return []*v1.Pod{p}
			}(),
			want: map[string]framework.Code{"a": OK}},
		{name: "matchLabelKeys narrows the selector to the pod's version",
			pod: func() *v1.Pod {
				p := ft.MakePod("p").Label("app", "web").Label("version", "v2").Spread(1, host, dns, web).Obj()
				p.Spec.TopologySpreadConstraints[0].MatchLabelKeys = []string{"version"}
				return p
			}(),
			existing: []*v1.Pod{
				ft.MakePod("w1").Label("app", "web").Label("version", "v1").Node("a").Obj(),
				ft.MakePod("w2").Label("app", "web").Label("version", "v1").Node("a").Obj(),
			},
			want: map[string]framework.Code{"a": OK, "b": OK}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := tt.nodes
			if ns == nil {
				ns = nodes()
			}
			snap := ft.Snapshot(ns, tt.existing...)
			for node, want := range tt.want {
				s := ft.Filter(context.Background(), mustNew(t, Args{}), snap, tt.pod, node)
				if s.Code() != want {
					t.Errorf("node %s: got %v, want %v", node, s, want)
				}
			}
		})
	}
}

func TestAddRemovePod(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w1 := webPod("w1", "a")
	snap := ft.Snapshot(nodes(), w1)
	pod := ft.MakePod("p").Label("app", "web").Spread(1, host, v1.DoNotSchedule, web).Obj()
	pl := mustNew(t, Args{})
	state := framework.NewCycleState()
	if _, s := pl.PreFilter(ctx, state, pod, snap); !s.IsSuccess() {
		t.Fatal(s)
	}
	a := snap.Get("a").Clone()
	if s := pl.Filter(ctx, state, pod, a); s.Code() != framework.Unschedulable {
		t.Fatalf("before: %v", s)
	}
	copied := state.Clone()
	_ = a.RemovePod(w1)
	if s := pl.RemovePod(ctx, copied, pod, framework.PodInfoOf(w1), a); !s.IsSuccess() {
		t.Fatal(s)
	}
	if s := pl.Filter(ctx, copied, pod, a); !s.IsSuccess() {
		t.Fatalf("after removing w1: %v", s)
	}
	b := snap.Get("b").Clone()
	other := webPod("w9", "b")
	b.AddPod(other)
	if s := pl.AddPod(ctx, copied, pod, framework.PodInfoOf(other), b); !s.IsSuccess() {
		t.Fatal(s)
	}
	// Now a: 0, b: 1, others 0: b would reach skew 2.
	if s := pl.Filter(ctx, copied, pod, b); s.Code() != framework.Unschedulable {
		t.Fatalf("after adding to b: %v", s)
	}
}

func TestScore(t *testing.T) {
	t.Parallel()
	sa := v1.ScheduleAnyway
	two := []*v1.Pod{webPod("w1", "a"), webPod("w2", "a")}
	tests := []struct {
		name      string
		pod       *v1.Pod
		workloads map[string]labels.Selector
		want      map[string]int64
	}{
		{name: "no constraints and no workloads",
			pod:  ft.MakePod("p").Label("app", "web").Obj(),
			want: map[string]int64{"a": 0, "b": 0, "c": 0, "nozone": 0}},
		{name: "zone: fewer matching pods score higher, nodes without the key score 0",
			pod:  ft.MakePod("p").Label("app", "web").Spread(1, zone, sa, web).Obj(),
			want: map[string]int64{"a": 0, "b": 0, "c": 100, "nozone": 0}},
		{name: "hostname",
			pod:  ft.MakePod("p").Label("app", "web").Spread(1, host, sa, web).Obj(),
			want: map[string]int64{"a": 0, "b": 100, "c": 100, "nozone": 100}},
		{name: "system defaults with the workload's selector",
			pod:       ft.MakePod("p").Label("app", "web").Obj(),
			workloads: map[string]labels.Selector{"ReplicaSet/web": labels.SelectorFromSet(web)},
			want:      map[string]int64{"a": 15, "b": 46, "c": 69, "nozone": 100}},
		{name: "system defaults ignore workloads that do not select the pod",
			pod:       ft.MakePod("p").Label("app", "api").Obj(),
			workloads: map[string]labels.Selector{"ReplicaSet/web": labels.SelectorFromSet(web)},
			want:      map[string]int64{"a": 0, "b": 0, "c": 0, "nozone": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			snap := ft.Snapshot(nodes(), two...)
			for k, sel := range tt.workloads {
				snap.SetWorkloadSelector("default", k, sel)
			}
			got, s := ft.Score(context.Background(), mustNew(t, Args{}), snap, tt.pod)
			if !s.IsSuccess() {
				t.Fatal(s)
			}
			if !maps.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestListDefaulting(t *testing.T) {
	t.Parallel()
	pl := mustNew(t, Args{DefaultingType: ListDefaulting, DefaultConstraints: []v1.TopologySpreadConstraint{
		{MaxSkew: 1, TopologyKey: host, WhenUnsatisfiable: v1.DoNotSchedule},
	}})
	snap := ft.Snapshot(nodes(), webPod("w1", "a"))
	snap.SetWorkloadSelector("default", "Service/web", labels.SelectorFromSet(web))
	pod := ft.MakePod("p").Label("app", "web").Obj()
	if s := ft.Filter(context.Background(), pl, snap, pod, "a"); s.Code() != framework.Unschedulable {
		t.Fatalf("a: %v", s)
	}
	if s := ft.Filter(context.Background(), pl, snap, pod, "b"); !s.IsSuccess() {
		t.Fatalf("b: %v", s)
	}
}

func TestArgsValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args Args
		ok   bool
	}{
		{"defaults", Args{}, true},
		{"list", Args{DefaultingType: ListDefaulting, DefaultConstraints: []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: zone, WhenUnsatisfiable: v1.ScheduleAnyway}}}, true},
		{"system with constraints", Args{DefaultConstraints: []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: zone, WhenUnsatisfiable: v1.ScheduleAnyway}}}, false},
		{"unknown type", Args{DefaultingType: "Auto"}, false},
		{"zero maxSkew", Args{DefaultingType: ListDefaulting, DefaultConstraints: []v1.TopologySpreadConstraint{{TopologyKey: zone, WhenUnsatisfiable: v1.ScheduleAnyway}}}, false},
		{"selector set", Args{DefaultingType: ListDefaulting, DefaultConstraints: []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: zone, WhenUnsatisfiable: v1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{}}}}, false},
		{"duplicate", Args{DefaultingType: ListDefaulting, DefaultConstraints: []v1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: zone, WhenUnsatisfiable: v1.ScheduleAnyway}, {MaxSkew: 2, TopologyKey: zone, WhenUnsatisfiable: v1.ScheduleAnyway}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := New(tt.args); (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

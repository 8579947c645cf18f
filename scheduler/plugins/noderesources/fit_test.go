package noderesources

import (
	"context"
	"maps"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
)

type res = map[string]string

func mustNew(t *testing.T, args FitArgs) *Fit {
	t.Helper()
	f, err := New(args)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFilter(t *testing.T) {
	t.Parallel()
	node := func(c res) *v1.Node { return ft.MakeNode("n").Capacity(c).Obj() }
	small := res{"cpu": "2", "memory": "2Gi", "pods": "10", "ephemeral-storage": "10Gi", "example.com/gpu": "2", "hugepages-2Mi": "4Mi"}
	tests := []struct {
		name     string
		node     *v1.Node
		existing []*v1.Pod
		pod      *v1.Pod
		args     FitArgs
		want     framework.Code
		reasons  []string
	}{
		{name: "zero requests fit a full node",
			node:     node(small),
			existing: []*v1.Pod{ft.MakePod("e").Req(res{"cpu": "2", "memory": "2Gi"}).Obj()},
			pod:      ft.MakePod("p").Obj(), want: framework.Success},
		{name: "explicit zero requests fit a full node",
			node:     node(small),
			existing: []*v1.Pod{ft.MakePod("e").Req(res{"cpu": "2"}).Obj()},
			pod:      ft.MakePod("p").Req(res{"cpu": "0"}).Obj(), want: framework.Success},
		{name: "fits exactly",
			node:     node(small),
			existing: []*v1.Pod{ft.MakePod("e").Req(res{"cpu": "1"}).Obj()},
			pod:      ft.MakePod("p").Req(res{"cpu": "1", "memory": "2Gi"}).Obj(), want: framework.Success},
		{name: "insufficient cpu",
			node:     node(small),
			existing: []*v1.Pod{ft.MakePod("e").Req(res{"cpu": "1500m"}).Obj()},
			pod:      ft.MakePod("p").Req(res{"cpu": "1"}).Obj(),
			want:     framework.Unschedulable, reasons: []string{"Insufficient cpu"}},
		{name: "request larger than the node is unresolvable",
			node: node(small), pod: ft.MakePod("p").Req(res{"cpu": "3"}).Obj(),
			want: framework.UnschedulableAndUnresolvable, reasons: []string{"Insufficient cpu"}},
		{name: "every insufficient resource is reported",
			node:     node(small),
			existing: []*v1.Pod{ft.MakePod("e").Req(res{"cpu": "2", "memory": "2Gi", "ephemeral-storage": "10Gi"}).Obj()},
			pod:      ft.MakePod("p").Req(res{"cpu": "1", "memory": "1", "ephemeral-storage": "1"}).Obj(),
			want:     framework.Unschedulable, reasons: []string{"Insufficient cpu", "Insufficient memory", "Insufficient ephemeral-storage"}},
		{name: "too many pods, even without requests",
			node:     node(res{"cpu": "2", "pods": "1"}),
			existing: []*v1.Pod{ft.MakePod("e").Obj()},
			pod:      ft.MakePod("p").Obj(),
			want:     framework.Unschedulable, reasons: []string{"Too many pods"}},
		{name: "extended resource fits",
			node:     node(small),
			existing: []*v1.Pod{ft.MakePod("e").Req(res{"example.com/gpu": "1"}).Obj()},
			pod:      ft.MakePod("p").Req(res{"example.com/gpu": "1"}).Obj(), want: framework.Success},
		{name: "extended resource insufficient",
			node:     node(small),
			existing: []*v1.Pod{ft.MakePod("e").Req(res{"example.com/gpu": "1"}).Obj()},
			pod:      ft.MakePod("p").Req(res{"example.com/gpu": "2"}).Obj(),
			want:     framework.Unschedulable, reasons: []string{"Insufficient example.com/gpu"}},
		{name: "extended resource the node lacks",
			node: node(small), pod: ft.MakePod("p").Req(res{"example.com/fpga": "1"}).Obj(),
			want: framework.UnschedulableAndUnresolvable, reasons: []string{"Insufficient example.com/fpga"}},
		{name: "extended resources reported in name order",
			node: node(small), pod: ft.MakePod("p").Req(res{"z.io/x": "1", "a.io/x": "1"}).Obj(),
			want: framework.UnschedulableAndUnresolvable, reasons: []string{"Insufficient a.io/x", "Insufficient z.io/x"}},
		{name: "ignored extended resource",
			node: node(small), pod: ft.MakePod("p").Req(res{"example.com/fpga": "1"}).Obj(),
			args: FitArgs{IgnoredResources: []string{"example.com/fpga"}}, want: framework.Success},
		{name: "ignored resource group",
			node: node(small), pod: ft.MakePod("p").Req(res{"example.com/fpga": "1"}).Obj(),
			args: FitArgs{IgnoredResourceGroups: []string{"example.com"}}, want: framework.Success},
		{name: "hugepages",
			node: node(small), pod: ft.MakePod("p").Req(res{"hugepages-2Mi": "6Mi"}).Obj(),
			want: framework.UnschedulableAndUnresolvable, reasons: []string{"Insufficient hugepages-2Mi"}},
		{name: "init container larger than the containers sets the request",
			node: node(small), pod: ft.MakePod("p").Req(res{"cpu": "1"}).InitReq(res{"cpu": "3"}).Obj(),
			want: framework.UnschedulableAndUnresolvable, reasons: []string{"Insufficient cpu"}},
		{name: "init containers are not summed",
			node: node(small), pod: ft.MakePod("p").Req(res{"cpu": "1"}).InitReq(res{"cpu": "2"}).InitReq(res{"cpu": "2"}).Obj(),
			want: framework.Success},
		{name: "sidecar adds to the containers and to later init containers",
			node: node(small), pod: ft.MakePod("p").Req(res{"cpu": "500m"}).SidecarReq(res{"cpu": "500m"}).InitReq(res{"cpu": "1600m"}).Obj(),
			want: framework.UnschedulableAndUnresolvable, reasons: []string{"Insufficient cpu"}},
		{name: "overhead counts",
			node: node(small), pod: func() *v1.Pod {
				p := ft.MakePod("p").Req(res{"cpu": "2"}).Obj()
				p.Spec.Overhead = ft.List(res{"cpu": "100m"})
				return p
			}(),
			want: framework.UnschedulableAndUnresolvable, reasons: []string{"Insufficient cpu"}},
		{name: "pod-level requests replace the containers' cpu",
			node: node(small), pod: func() *v1.Pod {
				p := ft.MakePod("p").Req(res{"cpu": "3"}).Obj()
				p.Spec.Resources = &v1.ResourceRequirements{Requests: ft.List(res{"cpu": "1"})}
				return p
			}(),
			want: framework.Success},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, e := range tt.existing {
				e.Spec.NodeName = "n"
			}
			snap := ft.Snapshot([]*v1.Node{tt.node}, tt.existing...)
			s := ft.Filter(context.Background(), mustNew(t, tt.args), snap, tt.pod, "n")
			if s.Code() != tt.want {
				t.Fatalf("got %v, want %v", s, tt.want)
			}
			if !slices.Equal(s.Reasons(), tt.reasons) {
				t.Fatalf("reasons %q, want %q", s.Reasons(), tt.reasons)
			}
		})
	}
}

func TestScore(t *testing.T) {
	t.Parallel()
	nodes := []*v1.Node{
		ft.MakeNode("a").Capacity(res{"cpu": "4", "memory": "10000", "pods": "10", "example.com/gpu": "4"}).Obj(),
		ft.MakeNode("b").Capacity(res{"cpu": "4", "memory": "10000", "pods": "10"}).Obj(),
	}
	busy := ft.MakePod("busy").Node("b").Req(res{"cpu": "2", "memory": "5000"}).Obj()
	pod := ft.MakePod("p").Req(res{"cpu": "1", "memory": "2000"}).Obj()
	shape := &RequestedToCapacityRatioParam{Shape: []UtilizationShapePoint{{0, 0}, {100, 10}}}
	tests := []struct {
		name string
		args FitArgs
		pod  *v1.Pod
		want map[string]int64
	}{
		{"LeastAllocated by default", FitArgs{}, pod, map[string]int64{"a": 77, "b": 27}},
		{"MostAllocated", FitArgs{ScoringStrategy: &ScoringStrategy{Type: MostAllocated}}, pod, map[string]int64{"a": 22, "b": 72}},
		{"RequestedToCapacityRatio", FitArgs{ScoringStrategy: &ScoringStrategy{Type: RequestedToCapacityRatio, RequestedToCapacityRatio: shape}}, pod,
			map[string]int64{"a": 23, "b": 73}},
		{"weights", FitArgs{ScoringStrategy: &ScoringStrategy{Resources: []ResourceSpec{{"cpu", 3}, {"memory", 1}}}}, pod,
			map[string]int64{"a": 76, "b": 26}},
		{"best-effort pod counts the default requests", FitArgs{}, ft.MakePod("p").Obj(),
			// cpu: (4000-100)/4000 = 97; memory: 200Mi is more than 10000 bytes = 0.
			map[string]int64{"a": 48, "b": 23}},
		{"extended resource scored when requested", FitArgs{ScoringStrategy: &ScoringStrategy{Resources: []ResourceSpec{{"cpu", 1}, {"example.com/gpu", 1}}}},
			ft.MakePod("p").Req(res{"cpu": "1", "example.com/gpu": "1"}).Obj(),
			// a: cpu 75, gpu 75; b has no gpu: cpu 25 only.
			map[string]int64{"a": 75, "b": 25}},
		{"extended resource ignored when not requested", FitArgs{ScoringStrategy: &ScoringStrategy{Resources: []ResourceSpec{{"cpu", 1}, {"example.com/gpu", 1}}}},
			ft.MakePod("p").Req(res{"cpu": "1"}).Obj(),
			map[string]int64{"a": 75, "b": 25}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, s := ft.Score(context.Background(), mustNew(t, tt.args), ft.Snapshot(nodes, busy), tt.pod)
			if !s.IsSuccess() {
				t.Fatal(s)
			}
			if !maps.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestArgsValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args FitArgs
		ok   bool
	}{
		{"defaults", FitArgs{}, true},
		{"unknown strategy", FitArgs{ScoringStrategy: &ScoringStrategy{Type: "Random"}}, false},
		{"weight too big", FitArgs{ScoringStrategy: &ScoringStrategy{Resources: []ResourceSpec{{"cpu", 101}}}}, false},
		{"negative weight", FitArgs{ScoringStrategy: &ScoringStrategy{Resources: []ResourceSpec{{"cpu", -1}}}}, false},
		{"duplicate resource", FitArgs{ScoringStrategy: &ScoringStrategy{Resources: []ResourceSpec{{"cpu", 1}, {"cpu", 2}}}}, false},
		{"ratio without shape", FitArgs{ScoringStrategy: &ScoringStrategy{Type: RequestedToCapacityRatio}}, false},
		{"shape not increasing", FitArgs{ScoringStrategy: &ScoringStrategy{Type: RequestedToCapacityRatio,
			RequestedToCapacityRatio: &RequestedToCapacityRatioParam{Shape: []UtilizationShapePoint{{50, 1}, {50, 2}}}}}, false},
		{"shape score above 10", FitArgs{ScoringStrategy: &ScoringStrategy{Type: RequestedToCapacityRatio,
			RequestedToCapacityRatio: &RequestedToCapacityRatioParam{Shape: []UtilizationShapePoint{{0, 11}}}}}, false},
		{"bad resource group", FitArgs{IgnoredResourceGroups: []string{"a/b"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tt.args)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

package balancedallocation

import (
	"context"
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
	"github.com/kubebus/kubebus/scheduler/plugins/noderesources"
)

type res = map[string]string

func TestScore(t *testing.T) {
	t.Parallel()
	nodes := []*v1.Node{
		ft.MakeNode("a").Capacity(res{"cpu": "4", "memory": "4000", "pods": "10", "example.com/gpu": "4"}).Obj(),
		ft.MakeNode("b").Capacity(res{"cpu": "4", "memory": "4000", "pods": "10"}).Obj(),
	}
	busy := ft.MakePod("busy").Node("b").Req(res{"cpu": "2"}).Obj()
	tests := []struct {
		name string
		args Args
		pod  *v1.Pod
		want map[string]int64
	}{
		// a: cpu 1/4, memory 1000/4000: balanced. b: cpu 3/4, memory 1/4: std 0.25.
		{"cpu and memory", Args{}, ft.MakePod("p").Req(res{"cpu": "1", "memory": "1000"}).Obj(), map[string]int64{"a": 100, "b": 75}},
		// a: cpu 1/4, memory 0: std 0.125.
		{"cpu only", Args{}, ft.MakePod("p").Req(res{"cpu": "1"}).Obj(), map[string]int64{"a": 87, "b": 62}},
		{"best-effort pod is skipped", Args{}, ft.MakePod("p").Obj(), map[string]int64{"a": 0, "b": 0}},
		// three resources on a: cpu .25, memory .25, gpu 1: std = sqrt(((.25-.5)^2*2 + .5^2)/3) = 0.3535.
		{"extended resource", Args{Resources: []noderesources.ResourceSpec{{Name: "cpu"}, {Name: "memory"}, {Name: "example.com/gpu"}}},
			ft.MakePod("p").Req(res{"cpu": "1", "memory": "1000", "example.com/gpu": "4"}).Obj(), map[string]int64{"a": 64, "b": 75}},
		{"fractions capped at 1", Args{}, ft.MakePod("p").Req(res{"cpu": "8", "memory": "1000"}).Obj(), map[string]int64{"a": 62, "b": 62}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pl, err := New(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			got, s := ft.Score(context.Background(), pl, ft.Snapshot(nodes, busy), tt.pod)
			if !s.IsSuccess() {
				t.Fatal(s)
			}
			if !maps.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPreScoreSkip(t *testing.T) {
	t.Parallel()
	pl, _ := New(Args{})
	s := pl.PreScore(context.Background(), framework.NewCycleState(), ft.MakePod("p").Obj(), nil, nil)
	if !s.IsSkip() {
		t.Fatalf("got %v, want Skip", s)
	}
}

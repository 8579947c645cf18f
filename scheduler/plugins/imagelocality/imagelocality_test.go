package imagelocality

import (
	"context"
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
)

func TestScore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		pod   *v1.Pod
		nodes []*v1.Node
		want  map[string]int64
	}{
		{"no images anywhere", ft.MakePod("p").Image("nginx").Obj(),
			[]*v1.Node{ft.MakeNode("a").Obj(), ft.MakeNode("b").Obj()},
			map[string]int64{"a": 0, "b": 0}},
		{"image on both nodes, full spread",
			ft.MakePod("p").Image("nginx:1.25").Obj(),
			[]*v1.Node{
				ft.MakeNode("a").Image(500*mb, "docker.io/library/nginx:1.25").Obj(),
				ft.MakeNode("b").Image(500*mb, "docker.io/library/nginx:1.25").Obj(),
			},
			// (500-23)/(1000-23) = 48
			map[string]int64{"a": 48, "b": 48}},
		{"image on one of two nodes counts half its size",
			ft.MakePod("p").Image("nginx:1.25").Obj(),
			[]*v1.Node{
				ft.MakeNode("a").Image(1000*mb, "nginx:1.25").Obj(),
				ft.MakeNode("b").Obj(),
			},
			// 500MiB effective: 48
			map[string]int64{"a": 48, "b": 0}},
		{"small image scores nothing",
			ft.MakePod("p").Image("busybox").Obj(),
			[]*v1.Node{ft.MakeNode("a").Image(10*mb, "busybox:latest").Obj()},
			map[string]int64{"a": 0}},
		{"large image is capped per container",
			ft.MakePod("p").Image("big").Obj(),
			[]*v1.Node{ft.MakeNode("a").Image(5000*mb, "big").Obj()},
			map[string]int64{"a": 100}},
		{"two containers double the ceiling",
			ft.MakePod("p").Image("big").Container("other", nil).Obj(),
			[]*v1.Node{ft.MakeNode("a").Image(5000*mb, "big").Obj()},
			// 5000MiB present, capped at 2 x 1000MiB
			map[string]int64{"a": 100}},
		{"tag matters",
			ft.MakePod("p").Image("nginx:1.24").Obj(),
			[]*v1.Node{ft.MakeNode("a").Image(500*mb, "nginx:1.25").Obj()},
			map[string]int64{"a": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, s := ft.Score(context.Background(), New(), ft.Snapshot(tt.nodes), tt.pod)
			if !s.IsSuccess() {
				t.Fatal(s)
			}
			if !maps.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPreScoreSkips: with none of the pod's images on any node every score
// would be 0, so PreScore skips the plugin; one node holding one of them is
// enough to score.
func TestPreScoreSkips(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		pod      *v1.Pod
		nodes    []*v1.Node
		wantSkip bool
	}{
		{"no node holds the image", ft.MakePod("p").Image("nginx").Obj(),
			[]*v1.Node{ft.MakeNode("a").Image(500*mb, "redis:7").Obj()}, true},
		{"no nodes", ft.MakePod("p").Image("nginx").Obj(), nil, true},
		{"one node holds it", ft.MakePod("p").Image("nginx").Obj(),
			[]*v1.Node{ft.MakeNode("a").Obj(), ft.MakeNode("b").Image(10*mb, "docker.io/library/nginx:latest").Obj()}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			snap := ft.Snapshot(tt.nodes)
			s := New().PreScore(context.Background(), framework.NewCycleState(), tt.pod, snap, snap.NodeInfos())
			if s.IsSkip() != tt.wantSkip || (!tt.wantSkip && !s.IsSuccess()) {
				t.Fatalf("PreScore = %v, want skip %v", s, tt.wantSkip)
			}
		})
	}
}

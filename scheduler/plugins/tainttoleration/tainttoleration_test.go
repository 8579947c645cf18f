package tainttoleration

import (
	"context"
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
)

func TestFilter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		node    *v1.Node
		pod     *v1.Pod
		want    framework.Code
		message string
	}{
		{"no taints", ft.MakeNode("n").Obj(), ft.MakePod("p").Obj(), framework.Success, ""},
		{"NoSchedule untolerated", ft.MakeNode("n").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(),
			ft.MakePod("p").Obj(), framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint {dedicated: gpu}"},
		{"NoExecute untolerated", ft.MakeNode("n").Taint("k", "v", v1.TaintEffectNoExecute).Obj(),
			ft.MakePod("p").Obj(), framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint {k: v}"},
		{"PreferNoSchedule does not filter", ft.MakeNode("n").Taint("k", "v", v1.TaintEffectPreferNoSchedule).Obj(),
			ft.MakePod("p").Obj(), framework.Success, ""},
		{"tolerated with Equal", ft.MakeNode("n").Taint("k", "v", v1.TaintEffectNoSchedule).Obj(),
			ft.MakePod("p").Toleration("k", v1.TolerationOpEqual, "v", v1.TaintEffectNoSchedule).Obj(), framework.Success, ""},
		{"Equal with another value", ft.MakeNode("n").Taint("k", "v", v1.TaintEffectNoSchedule).Obj(),
			ft.MakePod("p").Toleration("k", v1.TolerationOpEqual, "w", v1.TaintEffectNoSchedule).Obj(), framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint {k: v}"},
		{"tolerated with Exists and no effect", ft.MakeNode("n").Taint("k", "v", v1.TaintEffectNoExecute).Obj(),
			ft.MakePod("p").Toleration("k", v1.TolerationOpExists, "", "").Obj(), framework.Success, ""},
		{"toleration for another effect", ft.MakeNode("n").Taint("k", "v", v1.TaintEffectNoExecute).Obj(),
			ft.MakePod("p").Toleration("k", v1.TolerationOpExists, "", v1.TaintEffectNoSchedule).Obj(), framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint {k: v}"},
		{"empty key with Exists tolerates all", ft.MakeNode("n").Taint("a", "1", v1.TaintEffectNoSchedule).Taint("b", "", v1.TaintEffectNoExecute).Obj(),
			ft.MakePod("p").Toleration("", v1.TolerationOpExists, "", "").Obj(), framework.Success, ""},
		{"first untolerated taint is reported", ft.MakeNode("n").Taint("a", "1", v1.TaintEffectNoSchedule).Taint("b", "", v1.TaintEffectNoSchedule).Obj(),
			ft.MakePod("p").Toleration("a", v1.TolerationOpExists, "", "").Obj(), framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint {b: }"},
		{"Gt operator is not enabled", ft.MakeNode("n").Taint("k", "5", v1.TaintEffectNoSchedule).Obj(),
			ft.MakePod("p").Toleration("k", v1.TolerationOpGt, "1", "").Obj(), framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint {k: 5}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := ft.Filter(context.Background(), New(), ft.Snapshot([]*v1.Node{tt.node}), tt.pod, "n")
			if s.Code() != tt.want || s.Message() != tt.message {
				t.Fatalf("got %v, want %v %q", s, tt.want, tt.message)
			}
		})
	}
}

func TestScore(t *testing.T) {
	t.Parallel()
	pref := v1.TaintEffectPreferNoSchedule
	tests := []struct {
		name  string
		pod   *v1.Pod
		nodes []*v1.Node
		want  map[string]int64
	}{
		{"no taints anywhere", ft.MakePod("p").Obj(),
			[]*v1.Node{ft.MakeNode("a").Obj(), ft.MakeNode("b").Obj()},
			map[string]int64{"a": 100, "b": 100}},
		{"fewer untolerated PreferNoSchedule taints score higher", ft.MakePod("p").Obj(),
			[]*v1.Node{
				ft.MakeNode("a").Obj(),
				ft.MakeNode("b").Taint("x", "1", pref).Obj(),
				ft.MakeNode("c").Taint("x", "1", pref).Taint("y", "1", pref).Obj(),
			},
			map[string]int64{"a": 100, "b": 50, "c": 0}},
		{"tolerated taints do not count", ft.MakePod("p").Toleration("x", v1.TolerationOpExists, "", pref).Obj(),
			[]*v1.Node{
				ft.MakeNode("a").Taint("x", "1", pref).Obj(),
				ft.MakeNode("b").Taint("y", "1", pref).Obj(),
			},
			map[string]int64{"a": 100, "b": 0}},
		{"NoSchedule toleration does not tolerate PreferNoSchedule", ft.MakePod("p").Toleration("x", v1.TolerationOpExists, "", v1.TaintEffectNoSchedule).Obj(),
			[]*v1.Node{
				ft.MakeNode("a").Taint("x", "1", pref).Obj(),
				ft.MakeNode("b").Obj(),
			},
			map[string]int64{"a": 0, "b": 100}},
		{"other effects are ignored", ft.MakePod("p").Obj(),
			[]*v1.Node{
				ft.MakeNode("a").Taint("x", "1", v1.TaintEffectNoSchedule).Obj(),
				ft.MakeNode("b").Obj(),
			},
			map[string]int64{"a": 100, "b": 100}},
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

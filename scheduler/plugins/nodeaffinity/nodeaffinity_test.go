package nodeaffinity

import (
	"context"
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
)

func nameTerm(names ...string) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: names}}}
}

func TestFilter(t *testing.T) {
	t.Parallel()
	node := ft.MakeNode("n").Label("zone", "a").Label("gen", "5").Obj()
	in, notIn, exists, dne, gt, lt := v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn, v1.NodeSelectorOpExists, v1.NodeSelectorOpDoesNotExist, v1.NodeSelectorOpGt, v1.NodeSelectorOpLt
	tests := []struct {
		name string
		pod  *v1.Pod
		args Args
		want framework.Code
		msg  string
	}{
		{"no constraints", ft.MakePod("p").Obj(), Args{}, framework.Success, ""},
		{"nodeSelector matches", ft.MakePod("p").NodeSelector("zone", "a").Obj(), Args{}, framework.Success, ""},
		{"nodeSelector mismatch", ft.MakePod("p").NodeSelector("zone", "b").Obj(), Args{}, framework.UnschedulableAndUnresolvable, ErrReasonPod},
		{"nodeSelector missing label", ft.MakePod("p").NodeSelector("disk", "ssd").Obj(), Args{}, framework.UnschedulableAndUnresolvable, ErrReasonPod},
		{"In", ft.MakePod("p").RequiredNodeAffinity(ft.Expr("zone", in, "b", "a")).Obj(), Args{}, framework.Success, ""},
		{"In mismatch", ft.MakePod("p").RequiredNodeAffinity(ft.Expr("zone", in, "b")).Obj(), Args{}, framework.UnschedulableAndUnresolvable, ErrReasonPod},
		{"NotIn", ft.MakePod("p").RequiredNodeAffinity(ft.Expr("zone", notIn, "b")).Obj(), Args{}, framework.Success, ""},
		{"NotIn on missing label", ft.MakePod("p").RequiredNodeAffinity(ft.Expr("disk", notIn, "hdd")).Obj(), Args{}, framework.Success, ""},
		{"Exists", ft.MakePod("p").RequiredNodeAffinity(ft.Expr("zone", exists)).Obj(), Args{}, framework.Success, ""},
		{"DoesNotExist", ft.MakePod("p").RequiredNodeAffinity(ft.Expr("zone", dne)).Obj(), Args{}, framework.UnschedulableAndUnresolvable, ErrReasonPod},
		{"Gt", ft.MakePod("p").RequiredNodeAffinity(ft.Expr("gen", gt, "4")).Obj(), Args{}, framework.Success, ""},
		{"Lt", ft.MakePod("p").RequiredNodeAffinity(ft.Expr("gen", lt, "5")).Obj(), Args{}, framework.UnschedulableAndUnresolvable, ErrReasonPod},
		{"Gt with a non-number never matches", ft.MakePod("p").RequiredNodeAffinity(ft.Expr("gen", gt, "x")).Obj(), Args{}, framework.UnschedulableAndUnresolvable, ErrReasonPod},
		{"terms are ORed", ft.MakePod("p").RequiredNodeAffinity(ft.Expr("zone", in, "b")).RequiredNodeAffinity(ft.Expr("gen", in, "5")).Obj(), Args{}, framework.Success, ""},
		{"empty term matches nothing", ft.MakePod("p").RequiredNodeAffinity(v1.NodeSelectorTerm{}).Obj(), Args{}, framework.UnschedulableAndUnresolvable, ErrReasonPod},
		{"nodeSelector and affinity must both hold", ft.MakePod("p").NodeSelector("zone", "a").RequiredNodeAffinity(ft.Expr("gen", in, "6")).Obj(), Args{}, framework.UnschedulableAndUnresolvable, ErrReasonPod},
		{"metadata.name field", ft.MakePod("p").RequiredNodeAffinity(nameTerm("n")).Obj(), Args{}, framework.Success, ""},
		{"metadata.name excludes the node", ft.MakePod("p").RequiredNodeAffinity(nameTerm("m")).Obj(), Args{}, framework.UnschedulableAndUnresolvable, "excluded by PreFilterResult"},
		{"added affinity enforced", ft.MakePod("p").Obj(),
			Args{AddedAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{ft.Expr("zone", in, "b")}}}},
			framework.UnschedulableAndUnresolvable, ErrReasonEnforced},
		{"added affinity met", ft.MakePod("p").Obj(),
			Args{AddedAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{ft.Expr("zone", in, "a")}}}},
			framework.Success, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := ft.Filter(context.Background(), New(tt.args), ft.Snapshot([]*v1.Node{node}), tt.pod, "n")
			if s.Code() != tt.want || s.Message() != tt.msg {
				t.Fatalf("got %v, want %v %q", s, tt.want, tt.msg)
			}
		})
	}
}

func TestPreFilterNodeNames(t *testing.T) {
	t.Parallel()
	snap := ft.Snapshot(nil)
	ctx := context.Background()
	tests := []struct {
		name string
		pod  *v1.Pod
		want []string // nil: all nodes
		code framework.Code
	}{
		{"no affinity skips", ft.MakePod("p").Obj(), nil, framework.Skip},
		{"names narrow", ft.MakePod("p").RequiredNodeAffinity(nameTerm("a", "b")).Obj(), []string{"a", "b"}, framework.Success},
		{"a term without names allows all", ft.MakePod("p").RequiredNodeAffinity(nameTerm("a")).RequiredNodeAffinity(ft.Expr("x", v1.NodeSelectorOpExists)).Obj(), nil, framework.Success},
		{"union over terms", ft.MakePod("p").RequiredNodeAffinity(nameTerm("a")).RequiredNodeAffinity(nameTerm("c")).Obj(), []string{"a", "c"}, framework.Success},
		{"conflicting names within a term", ft.MakePod("p").RequiredNodeAffinity(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{
			{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: []string{"a"}},
			{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: []string{"b"}},
		}}).Obj(), nil, framework.UnschedulableAndUnresolvable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, s := New(Args{}).PreFilter(ctx, framework.NewCycleState(), tt.pod, snap)
			if s.Code() != tt.code {
				t.Fatalf("status %v, want %v", s, tt.code)
			}
			if tt.want == nil {
				if !r.AllNodes() {
					t.Fatalf("result %v, want all nodes", r.NodeNames)
				}
				return
			}
			if r.AllNodes() || !r.NodeNames.HasAll(tt.want...) || r.NodeNames.Len() != len(tt.want) {
				t.Fatalf("result %v, want %v", r, tt.want)
			}
		})
	}
}

func TestScore(t *testing.T) {
	t.Parallel()
	nodes := []*v1.Node{
		ft.MakeNode("a").Label("zone", "a").Label("disk", "ssd").Obj(),
		ft.MakeNode("b").Label("zone", "b").Label("disk", "ssd").Obj(),
		ft.MakeNode("c").Label("zone", "c").Obj(),
	}
	in := v1.NodeSelectorOpIn
	tests := []struct {
		name string
		pod  *v1.Pod
		args Args
		want map[string]int64
	}{
		{"no preferences", ft.MakePod("p").Obj(), Args{}, map[string]int64{"a": 0, "b": 0, "c": 0}},
		{"weights add up and normalize", ft.MakePod("p").
			PreferredNodeAffinity(2, ft.Expr("zone", in, "a")).
			PreferredNodeAffinity(3, ft.Expr("disk", in, "ssd")).Obj(), Args{},
			map[string]int64{"a": 100, "b": 60, "c": 0}},
		{"added preferred affinity", ft.MakePod("p").Obj(),
			Args{AddedAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 5, Preference: ft.Expr("zone", in, "c")}}}},
			map[string]int64{"a": 0, "b": 0, "c": 100}},
		{"zero weight ignored", ft.MakePod("p").PreferredNodeAffinity(0, ft.Expr("zone", in, "a")).Obj(), Args{},
			map[string]int64{"a": 0, "b": 0, "c": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, s := ft.Score(context.Background(), New(tt.args), ft.Snapshot(nodes), tt.pod)
			if !s.IsSuccess() {
				t.Fatal(s)
			}
			if !maps.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

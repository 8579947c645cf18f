package interpodaffinity

import (
	"context"
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
)

const (
	host = v1.LabelHostname
	zone = v1.LabelTopologyZone
)

func nodes() []*v1.Node {
	return []*v1.Node{
		ft.MakeNode("a").Label(zone, "z1").Obj(),
		ft.MakeNode("b").Label(zone, "z1").Obj(),
		ft.MakeNode("c").Label(zone, "z2").Obj(),
		ft.MakeNode("nozone").Obj(),
	}
}

func namespaces() []*v1.Namespace {
	return []*v1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"team": "core"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "ns1", Labels: map[string]string{"team": "x"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "ns2", Labels: map[string]string{"team": "y"}}},
	}
}

func app(v string) map[string]string { return map[string]string{"app": v} }

func withNamespaces(t v1.PodAffinityTerm, ns ...string) v1.PodAffinityTerm {
	t.Namespaces = ns
	return t
}

func withNSSelector(t v1.PodAffinityTerm, sel map[string]string) v1.PodAffinityTerm {
	t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: sel}
	return t
}

func mustNew(t *testing.T, args Args) *InterPodAffinity {
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
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		want     map[string]framework.Code
		reason   string
	}{
		{name: "no affinity",
			pod:  ft.MakePod("p").Obj(),
			want: map[string]framework.Code{"a": OK, "b": OK, "c": OK, "nozone": OK}},
		{name: "required affinity by zone",
			pod:      ft.MakePod("p").PodAffinity(ft.Term(zone, app("db"))).Obj(),
			existing: []*v1.Pod{ft.MakePod("db").Label("app", "db").Node("a").Obj()},
			want:     map[string]framework.Code{"a": OK, "b": OK, "c": UU, "nozone": UU},
			reason:   ErrReasonAffinityRulesNotMatch},
		{name: "first pod of a self-affine group goes where the key exists",
			pod:  ft.MakePod("p").Label("app", "db").PodAffinity(ft.Term(zone, app("db"))).Obj(),
			want: map[string]framework.Code{"a": OK, "b": OK, "c": OK, "nozone": UU}},
		{name: "not self-affine and nothing matches",
			pod:  ft.MakePod("p").PodAffinity(ft.Term(zone, app("db"))).Obj(),
			want: map[string]framework.Code{"a": UU, "b": UU, "c": UU, "nozone": UU}},
		{name: "required anti-affinity by hostname",
			pod:      ft.MakePod("p").Label("app", "web").PodAntiAffinity(ft.Term(host, app("web"))).Obj(),
			existing: []*v1.Pod{ft.MakePod("w1").Label("app", "web").Node("a").Obj()},
			want:     map[string]framework.Code{"a": U, "b": OK, "c": OK, "nozone": OK},
			reason:   ErrReasonAntiAffinityRulesNotMatch},
		{name: "required anti-affinity by zone",
			pod:      ft.MakePod("p").PodAntiAffinity(ft.Term(zone, app("web"))).Obj(),
			existing: []*v1.Pod{ft.MakePod("w1").Label("app", "web").Node("a").Obj()},
			want:     map[string]framework.Code{"a": U, "b": U, "c": OK, "nozone": OK}},
		{name: "existing pod's anti-affinity rejects the pod",
			pod:      ft.MakePod("p").Label("app", "web").Obj(),
			existing: []*v1.Pod{ft.MakePod("w1").Node("a").PodAntiAffinity(ft.Term(zone, app("web"))).Obj()},
			want:     map[string]framework.Code{"a": U, "b": U, "c": OK, "nozone": OK},
			reason:   ErrReasonExistingAntiAffinityRulesNotMatch},
		{name: "existing pod's anti-affinity does not match other labels",
			pod:      ft.MakePod("p").Label("app", "api").Obj(),
			existing: []*v1.Pod{ft.MakePod("w1").Node("a").PodAntiAffinity(ft.Term(zone, app("web"))).Obj()},
			want:     map[string]framework.Code{"a": OK, "b": OK, "c": OK, "nozone": OK}},
		{name: "terms apply to the pod's own namespace by default",
			pod:      ft.MakePod("p").PodAntiAffinity(ft.Term(host, app("web"))).Obj(),
			existing: []*v1.Pod{ft.MakePod("w1").Namespace("ns1").Label("app", "web").Node("a").Obj()},
			want:     map[string]framework.Code{"a": OK, "b": OK, "c": OK, "nozone": OK}},
		{name: "explicit namespaces",
			pod: ft.MakePod("p").PodAntiAffinity(withNamespaces(ft.Term(host, app("web")), "ns1")).Obj(),
			existing: []*v1.Pod{
				ft.MakePod("w1").Namespace("ns1").Label("app", "web").Node("a").Obj(),
				ft.MakePod("w2").Namespace("ns2").Label("app", "web").Node("b").Obj(),
			},
			want: map[string]framework.Code{"a": U, "b": OK, "c": OK, "nozone": OK}},
		{name: "namespaceSelector picks namespaces by label",
			pod: ft.MakePod("p").PodAntiAffinity(withNSSelector(ft.Term(host, app("web")), map[string]string{"team": "x"})).Obj(),
			existing: []*v1.Pod{
				ft.MakePod("w1").Namespace("ns1").Label("app", "web").Node("a").Obj(),
				ft.MakePod("w2").Namespace("ns2").Label("app", "web").Node("b").Obj(),
			},
			want: map[string]framework.Code{"a": U, "b": OK, "c": OK, "nozone": OK}},
		{name: "empty namespaceSelector selects every namespace",
			pod: ft.MakePod("p").PodAntiAffinity(withNSSelector(ft.Term(host, app("web")), nil)).Obj(),
			existing: []*v1.Pod{
				ft.MakePod("w1").Namespace("ns1").Label("app", "web").Node("a").Obj(),
				ft.MakePod("w2").Namespace("ns2").Label("app", "web").Node("b").Obj(),
			},
			want: map[string]framework.Code{"a": U, "b": U, "c": OK, "nozone": OK}},
		{name: "namespaces and namespaceSelector are ORed",
			pod: ft.MakePod("p").PodAffinity(withNSSelector(withNamespaces(ft.Term(zone, app("db")), "ns2"), map[string]string{"team": "x"})).Obj(),
			existing: []*v1.Pod{
				ft.MakePod("d1").Namespace("ns1").Label("app", "db").Node("a").Obj(),
				ft.MakePod("d2").Namespace("ns2").Label("app", "db").Node("c").Obj(),
			},
			want: map[string]framework.Code{"a": OK, "b": OK, "c": OK, "nozone": UU}},
		{name: "existing pod's anti-affinity with namespaceSelector matching the pod's namespace labels",
			pod: ft.MakePod("p").Namespace("ns1").Label("app", "web").Obj(),
			existing: []*v1.Pod{
				ft.MakePod("g").Namespace("ns2").Node("a").PodAntiAffinity(withNSSelector(ft.Term(host, app("web")), map[string]string{"team": "x"})).Obj(),
				ft.MakePod("h").Namespace("ns2").Node("b").PodAntiAffinity(withNSSelector(ft.Term(host, app("web")), map[string]string{"team": "y"})).Obj(),
			},
			want: map[string]framework.Code{"a": U, "b": OK, "c": OK, "nozone": OK}},
		{name: "affinity terms must all match the same pods",
			pod: ft.MakePod("p").PodAffinity(ft.Term(zone, app("db"))).PodAffinity(ft.Term(zone, map[string]string{"tier": "x"})).Obj(),
			existing: []*v1.Pod{
				ft.MakePod("d1").Label("app", "db").Node("a").Obj(),
				ft.MakePod("d2").Label("tier", "x").Node("c").Obj(),
			},
			want: map[string]framework.Code{"a": UU, "b": UU, "c": UU, "nozone": UU}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			snap := framework.NewSnapshot(nodes(), tt.existing, namespaces())
			for node, want := range tt.want {
				s := ft.Filter(context.Background(), mustNew(t, Args{}), snap, tt.pod, node)
				if s.Code() != want {
					t.Errorf("node %s: got %v, want %v", node, s, want)
				}
				if want != framework.Success && tt.reason != "" && s.Message() != tt.reason {
					t.Errorf("node %s: reason %q, want %q", node, s.Message(), tt.reason)
				}
			}
		})
	}
}

func TestAddRemovePod(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	existing := ft.MakePod("w1").Label("app", "web").Node("a").Obj()
	snap := framework.NewSnapshot(nodes(), []*v1.Pod{existing}, nil)
	pod := ft.MakePod("p").PodAntiAffinity(ft.Term(zone, app("web"))).Obj()
	pl := mustNew(t, Args{})
	state := framework.NewCycleState()
	if _, s := pl.PreFilter(ctx, state, pod, snap); !s.IsSuccess() {
		t.Fatal(s)
	}
	b := snap.Get("b").Clone()
	if s := pl.Filter(ctx, state, pod, b); s.Code() != framework.Unschedulable {
		t.Fatalf("before removal: %v", s)
	}
	// Simulate preempting w1 on a, on a copy of the state.
	copied := state.Clone()
	a := snap.Get("a").Clone()
	pi := framework.PodInfoOf(existing)
	if err := a.RemovePod(existing); err != nil {
		t.Fatal(err)
	}
	if s := pl.RemovePod(ctx, copied, pod, pi, a); !s.IsSuccess() {
		t.Fatal(s)
	}
	if s := pl.Filter(ctx, copied, pod, b); !s.IsSuccess() {
		t.Fatalf("after removal: %v", s)
	}
	if s := pl.Filter(ctx, state, pod, b); s.Code() != framework.Unschedulable {
		t.Fatalf("original state changed: %v", s)
	}
	a.AddPodInfo(pi)
	if s := pl.AddPod(ctx, copied, pod, pi, a); !s.IsSuccess() {
		t.Fatal(s)
	}
	if s := pl.Filter(ctx, copied, pod, b); s.Code() != framework.Unschedulable {
		t.Fatalf("after adding back: %v", s)
	}
}

func TestScore(t *testing.T) {
	t.Parallel()
	zero := int32(0)
	tests := []struct {
		name     string
		args     Args
		pod      *v1.Pod
		existing []*v1.Pod
		want     map[string]int64
	}{
		{name: "nothing to score",
			pod:  ft.MakePod("p").Obj(),
			want: map[string]int64{"a": 0, "b": 0, "c": 0, "nozone": 0}},
		{name: "preferred affinity by zone",
			pod:      ft.MakePod("p").PreferredPodAffinity(5, ft.Term(zone, app("db"))).Obj(),
			existing: []*v1.Pod{ft.MakePod("db").Label("app", "db").Node("c").Obj()},
			want:     map[string]int64{"a": 0, "b": 0, "c": 100, "nozone": 0}},
		{name: "preferred anti-affinity by hostname",
			pod:      ft.MakePod("p").PreferredPodAntiAffinity(5, ft.Term(host, app("web"))).Obj(),
			existing: []*v1.Pod{ft.MakePod("w").Label("app", "web").Node("a").Obj()},
			want:     map[string]int64{"a": 0, "b": 100, "c": 100, "nozone": 100}},
		{name: "affinity and anti-affinity weights combine",
			pod:      ft.MakePod("p").PreferredPodAffinity(4, ft.Term(zone, app("db"))).PreferredPodAntiAffinity(2, ft.Term(host, app("db"))).Obj(),
			existing: []*v1.Pod{ft.MakePod("db").Label("app", "db").Node("a").Obj()},
			// a: 4-2 = 2; b: 4; c, nozone: 0. Normalized over [0, 4].
			want: map[string]int64{"a": 50, "b": 100, "c": 0, "nozone": 0}},
		{name: "existing pod's required affinity attracts the pod (hard weight)",
			pod:      ft.MakePod("p").Label("app", "web").Obj(),
			existing: []*v1.Pod{ft.MakePod("cache").Node("c").PodAffinity(ft.Term(zone, app("web"))).Obj()},
			want:     map[string]int64{"a": 0, "b": 0, "c": 100, "nozone": 0}},
		{name: "hard weight 0 ignores existing required affinity",
			args:     Args{HardPodAffinityWeight: &zero},
			pod:      ft.MakePod("p").Label("app", "web").Obj(),
			existing: []*v1.Pod{ft.MakePod("cache").Node("c").PodAffinity(ft.Term(zone, app("web"))).Obj()},
			want:     map[string]int64{"a": 0, "b": 0, "c": 0, "nozone": 0}},
		{name: "existing pod's preferred anti-affinity repels the pod",
			pod:      ft.MakePod("p").Label("app", "web").Obj(),
			existing: []*v1.Pod{ft.MakePod("x").Node("a").PreferredPodAntiAffinity(10, ft.Term(zone, app("web"))).Obj()},
			want:     map[string]int64{"a": 0, "b": 0, "c": 100, "nozone": 100}},
		{name: "ignorePreferredTermsOfExistingPods",
			args:     Args{IgnorePreferredTermsOfExistingPods: true},
			pod:      ft.MakePod("p").Label("app", "web").Obj(),
			existing: []*v1.Pod{ft.MakePod("x").Node("a").PreferredPodAntiAffinity(10, ft.Term(zone, app("web"))).Obj()},
			want:     map[string]int64{"a": 0, "b": 0, "c": 0, "nozone": 0}},
		{name: "preferred term with namespaceSelector",
			pod: ft.MakePod("p").PreferredPodAffinity(5, withNSSelector(ft.Term(host, app("db")), map[string]string{"team": "y"})).Obj(),
			existing: []*v1.Pod{
				ft.MakePod("d1").Namespace("ns1").Label("app", "db").Node("a").Obj(),
				ft.MakePod("d2").Namespace("ns2").Label("app", "db").Node("b").Obj(),
			},
			want: map[string]int64{"a": 0, "b": 100, "c": 0, "nozone": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			snap := framework.NewSnapshot(nodes(), tt.existing, namespaces())
			got, s := ft.Score(context.Background(), mustNew(t, tt.args), snap, tt.pod)
			if !s.IsSuccess() {
				t.Fatal(s)
			}
			if !maps.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	t.Parallel()
	bad := int32(101)
	if _, err := New(Args{HardPodAffinityWeight: &bad}); err == nil {
		t.Fatal("hardPodAffinityWeight 101 accepted")
	}
}

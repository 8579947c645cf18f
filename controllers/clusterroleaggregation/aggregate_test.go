package clusterroleaggregation

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	readPods    = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}
	writePods   = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "delete"}}
	readSecrets = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}
	healthz     = rbacv1.PolicyRule{NonResourceURLs: []string{"/healthz"}, Verbs: []string{"get"}}
)

func role(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
}

func aggregating(name string, labels map[string]string, selectors ...metav1.LabelSelector) *rbacv1.ClusterRole {
	cr := role(name, labels)
	cr.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: selectors}
	return cr
}

func matchLabels(kv ...string) metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return metav1.LabelSelector{MatchLabels: m}
}

func TestAggregate(t *testing.T) {
	t.Parallel()
	view := map[string]string{"aggregate-to-view": "true"}
	edit := map[string]string{"aggregate-to-edit": "true"}
	tests := []struct {
		name   string
		target *rbacv1.ClusterRole
		all    []*rbacv1.ClusterRole
		want   []rbacv1.PolicyRule
	}{
		{
			name:   "no aggregation rule",
			target: role("plain", nil, readPods),
			all:    []*rbacv1.ClusterRole{role("b", view, writePods)},
			want:   nil,
		},
		{
			name:   "nothing matches",
			target: aggregating("view", nil, matchLabels("aggregate-to-view", "true")),
			all:    []*rbacv1.ClusterRole{role("b", edit, writePods)},
			want:   []rbacv1.PolicyRule{},
		},
		{
			name:   "union in name order",
			target: aggregating("view", nil, matchLabels("aggregate-to-view", "true")),
			all:    []*rbacv1.ClusterRole{role("z", view, readSecrets), role("a", view, readPods, healthz), role("m", edit, writePods)},
			want:   []rbacv1.PolicyRule{readPods, healthz, readSecrets},
		},
		{
			name:   "duplicates once",
			target: aggregating("view", nil, matchLabels("aggregate-to-view", "true")),
			all:    []*rbacv1.ClusterRole{role("a", view, readPods), role("b", view, readPods, readSecrets)},
			want:   []rbacv1.PolicyRule{readPods, readSecrets},
		},
		{
			name:   "selectors in order",
			target: aggregating("admin", nil, matchLabels("aggregate-to-edit", "true"), matchLabels("aggregate-to-view", "true")),
			all:    []*rbacv1.ClusterRole{role("a", view, readPods), role("b", edit, writePods), role("c", map[string]string{"aggregate-to-view": "true", "aggregate-to-edit": "true"}, readSecrets)},
			want:   []rbacv1.PolicyRule{writePods, readSecrets, readPods},
		},
		{
			name:   "skips itself",
			target: aggregating("view", view, matchLabels("aggregate-to-view", "true")),
			all:    []*rbacv1.ClusterRole{aggregating("view", view, matchLabels("aggregate-to-view", "true")), role("a", view, readPods)},
			want:   []rbacv1.PolicyRule{readPods},
		},
		{
			name:   "aggregates an aggregated role's current rules",
			target: aggregating("admin", nil, matchLabels("aggregate-to-admin", "true")),
			all: []*rbacv1.ClusterRole{
				func() *rbacv1.ClusterRole {
					cr := aggregating("edit", map[string]string{"aggregate-to-admin": "true"}, matchLabels("aggregate-to-edit", "true"))
					cr.Rules = []rbacv1.PolicyRule{writePods}
					return cr
				}(),
			},
			want: []rbacv1.PolicyRule{writePods},
		},
		{
			name:   "bad selector matches nothing",
			target: aggregating("view", nil, metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Near"}}}, matchLabels("aggregate-to-view", "true")),
			all:    []*rbacv1.ClusterRole{role("a", view, readPods)},
			want:   []rbacv1.PolicyRule{readPods},
		},
		{
			name:   "empty selector matches every other role",
			target: aggregating("all", nil, metav1.LabelSelector{}),
			all:    []*rbacv1.ClusterRole{role("a", nil, readPods), role("b", edit, writePods)},
			want:   []rbacv1.PolicyRule{readPods, writePods},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Aggregate(tt.target, tt.all)
			if (got == nil) != (tt.want == nil) || !apiequality.Semantic.DeepEqual(got, tt.want) {
				t.Fatalf("Aggregate = %+v, want %+v", got, tt.want)
			}
		})
	}
}

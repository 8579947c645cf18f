package clusterroleaggregation

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Aggregate returns the rules target aggregates from all: for each of its
// selectors in turn, the rules of the ClusterRoles it matches in name
// order, target itself left out, each rule once (the first time it is
// met). A selector that does not parse matches nothing. It returns nil for
// a ClusterRole without an aggregationRule and an empty, non-nil list when
// nothing matches.
func Aggregate(target *rbacv1.ClusterRole, all []*rbacv1.ClusterRole) []rbacv1.PolicyRule {
	if target.AggregationRule == nil {
		return nil
	}
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	rules := []rbacv1.PolicyRule{}
	for i := range target.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&target.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			continue
		}
		for _, cr := range sorted {
			if cr.Name == target.Name || !sel.Matches(labels.Set(cr.Labels)) {
				continue
			}
			for _, rule := range cr.Rules {
				if !slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool { return apiequality.Semantic.DeepEqual(r, rule) }) {
					rules = append(rules, rule)
				}
			}
		}
	}
	return rules
}

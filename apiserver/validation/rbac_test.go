package validation

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateRBAC(t *testing.T) {
	t.Parallel()
	nsMeta := metav1.ObjectMeta{Name: "system:leader-locking", Namespace: "default", ResourceVersion: "1"}
	clusterMeta := metav1.ObjectMeta{Name: "system:node", ResourceVersion: "1"}
	getPods := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	healthz := rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}
	roleRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "r"}
	clusterRoleRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node"}
	alice := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "builder"}

	role := func(rules ...rbacv1.PolicyRule) *rbacv1.Role { return &rbacv1.Role{ObjectMeta: nsMeta, Rules: rules} }
	clusterRole := func(rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{ObjectMeta: clusterMeta, Rules: rules}
	}
	aggregated := func(selectors ...metav1.LabelSelector) *rbacv1.ClusterRole {
		r := clusterRole()
		r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: selectors}
		return r
	}
	binding := func(ref rbacv1.RoleRef, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: nsMeta, RoleRef: ref, Subjects: subjects}
	}
	clusterBinding := func(ref rbacv1.RoleRef, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: clusterMeta, RoleRef: ref, Subjects: subjects}
	}
	renamed := func(b *rbacv1.RoleBinding, name string) *rbacv1.RoleBinding { b.Name = name; return b }

	tests := []struct {
		name  string
		errs  field.ErrorList
		wants []want
	}{
		{"role", validateRole(role(getPods)), nil},
		{"role name is a path segment", validateRole(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "a/b", Namespace: "default"}}),
			[]want{invalid("metadata.name")}},
		{"role needs a namespace", validateRole(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r"}}), []want{required("metadata.namespace")}},
		{"rule without verbs", validateRole(role(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}})),
			[]want{required("rules[0].verbs")}},
		{"rule without groups or resources", validateRole(role(rbacv1.PolicyRule{Verbs: []string{"get"}})),
			[]want{required("rules[0].apiGroups"), required("rules[0].resources")}},
		{"names of several resources", validateRole(role(rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""},
			Resources: []string{"pods", "secrets"}, ResourceNames: []string{"x"}})), []want{required("rules[0].resourceNames")}},
		{"non-resource URL in a role", validateRole(role(healthz)), []want{invalid("rules[0].nonResourceURLs")}},
		{"non-resource URL in a cluster role", validateClusterRole(clusterRole(healthz, getPods)), nil},
		{"non-resource URL and resources", validateClusterRole(clusterRole(rbacv1.PolicyRule{Verbs: []string{"get"},
			NonResourceURLs: []string{"/x"}, Resources: []string{"pods"}})), []want{invalid("rules[0].nonResourceURLs")}},
		{"cluster role has no namespace", validateClusterRole(&rbacv1.ClusterRole{ObjectMeta: nsMeta}), []want{forbidden("metadata.namespace")}},
		{"aggregation rule", validateClusterRole(aggregated(metav1.LabelSelector{MatchLabels: map[string]string{"a": "true"}})), nil},
		{"aggregation rule without selectors", validateClusterRole(aggregated()), []want{required("aggregationRule.clusterRoleSelectors")}},
		{"aggregation rule with a bad selector", validateClusterRole(aggregated(metav1.LabelSelector{MatchLabels: map[string]string{"a b": "true"}})),
			[]want{invalid("aggregationRule.clusterRoleSelectors[0].matchLabels"), invalid("aggregationRule.clusterRoleSelectors[0]")}},

		{"role binding", validateRoleBinding(binding(roleRef, alice, sa)), nil},
		{"role binding to a cluster role", validateRoleBinding(binding(clusterRoleRef, alice)), nil},
		{"role ref group", validateRoleBinding(binding(rbacv1.RoleRef{APIGroup: "rbac", Kind: "Role", Name: "r"})),
			[]want{notSupported("roleRef.apiGroup")}},
		{"role ref kind", validateRoleBinding(binding(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Policy", Name: "r"})),
			[]want{notSupported("roleRef.kind")}},
		{"role ref name", validateRoleBinding(binding(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role"})),
			[]want{required("roleRef.name")}},
		{"role ref name is a path segment", validateRoleBinding(binding(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: ".."})),
			[]want{invalid("roleRef.name")}},
		{"user without the RBAC group", validateRoleBinding(binding(roleRef, rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice"})),
			[]want{notSupported("subjects[0].apiGroup")}},
		{"group without a name", validateRoleBinding(binding(roleRef, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName})),
			[]want{required("subjects[0].name"), invalid("subjects[0].name")}},
		{"service account in the RBAC group", validateRoleBinding(binding(roleRef, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, APIGroup: rbacv1.GroupName, Name: "sa"})),
			[]want{notSupported("subjects[0].apiGroup")}},
		{"service account name", validateRoleBinding(binding(roleRef, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "Not_Valid"})),
			[]want{invalid("subjects[0].name")}},
		{"unknown subject kind", validateRoleBinding(binding(roleRef, rbacv1.Subject{Kind: "Robot", Name: "r2"})),
			[]want{notSupported("subjects[0].kind")}},
		{"cluster role binding", validateClusterRoleBinding(clusterBinding(clusterRoleRef, alice,
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "ops", Name: "robot"})), nil},
		{"cluster role binding to a role", validateClusterRoleBinding(clusterBinding(roleRef)), []want{notSupported("roleRef.kind")}},
		{"cluster role binding service account needs a namespace", validateClusterRoleBinding(clusterBinding(clusterRoleRef, sa)),
			[]want{required("subjects[0].namespace")}},

		{"role update", validateRoleUpdate(role(getPods), role()), nil},
		{"cluster role update", validateClusterRoleUpdate(clusterRole(getPods), clusterRole()), nil},
		{"role binding subjects change", validateRoleBindingUpdate(binding(roleRef, alice), binding(roleRef)), nil},
		{"role binding roleRef change", validateRoleBindingUpdate(binding(clusterRoleRef, alice), binding(roleRef, alice)),
			[]want{invalid("roleRef")}},
		{"role binding rename", validateRoleBindingUpdate(renamed(binding(roleRef), "other"), binding(roleRef)),
			[]want{invalid("metadata.name")}},
		{"cluster role binding roleRef change", validateClusterRoleBindingUpdate(clusterBinding(clusterRoleRef),
			clusterBinding(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"})), []want{invalid("roleRef")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			expectErrors(t, tt.errs, tt.wants...)
		})
	}
}

func TestRoleRefChangeMessage(t *testing.T) {
	t.Parallel()
	old := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", ResourceVersion: "1"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}}
	changed := old.DeepCopy()
	changed.RoleRef.Name = "edit"
	errs := validateClusterRoleBindingUpdate(changed, old)
	if len(errs) != 1 || errs[0].Detail != "cannot change roleRef" {
		t.Errorf("errors = %v, want one saying cannot change roleRef", errs)
	}
}

package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestReconcile(t *testing.T) {
	t.Parallel()
	getPods := newRule("get").groups("").resources("pods").rule()
	listPods := newRule("list").groups("").resources("pods").rule()
	getSecrets := newRule("get").groups("").resources("secrets").rule()

	bootstrapped := func(o interface{ GetObjectMeta() metav1.Object }) {
		m := o.GetObjectMeta()
		m.SetLabels(map[string]string{BootstrapLabel: BootstrapLabelValue})
		m.SetAnnotations(map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"})
	}
	cr := func(annotate bool, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		r := clusterRole("r", rules...)
		r.ResourceVersion = "7"
		if annotate {
			bootstrapped(r)
		}
		return r
	}
	protect := func(o interface{ GetObjectMeta() metav1.Object }) {
		o.GetObjectMeta().SetAnnotations(map[string]string{rbacv1.AutoUpdateAnnotationKey: "false"})
	}
	protectedRole := cr(false, getSecrets)
	protect(protectedRole)
	withAggregation := cr(true)
	withAggregation.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a": "true"}}}}

	crb := func(annotate bool, roleName string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
		b := clusterBinding(roleName, subjects...)
		b.Name = "b"
		if annotate {
			bootstrapped(b)
		}
		return b
	}
	protectedBinding := crb(true, "other", user("x"))
	protect(protectedBinding)
	// system:node, as an older kubebus bound it (to the whole group
	// system:nodes) and as now (to nobody).
	nodeBinding := func(subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
		b := clusterBinding("system:node", subjects...)
		bootstrapped(b)
		return b
	}
	nodesGroup := group("system:nodes")
	legacyNodesGroup := rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "system:nodes"}
	protectedNodeBinding := nodeBinding(nodesGroup)
	protect(protectedNodeBinding)
	otherBinding := nodeBinding(nodesGroup)
	otherBinding.Name = "other"

	tests := []struct {
		name        string
		existing    runtime.Object
		desired     runtime.Object
		want        runtime.Object // nil: existing unchanged
		wantChanged bool
	}{
		{"cluster role up to date", cr(true, getPods, listPods), cr(true, getPods), nil, false},
		{"cluster role missing a rule keeps its extra ones", cr(true, getSecrets), cr(true, getPods),
			cr(true, getSecrets, getPods), true},
		{"labels and annotations added", cr(false, getPods), cr(true, getPods), cr(true, getPods), true},
		{"autoupdate false", protectedRole, cr(true, getPods), nil, false},
		{"aggregation rule set", cr(true), withAggregation, withAggregation, true},
		{"role missing a rule", role("ns", "r", getSecrets), role("ns", "r", getPods),
			role("ns", "r", getSecrets, getPods), true},
		{"binding up to date", crb(true, "role", user("a"), user("b")), crb(true, "role", user("a")), nil, false},
		{"binding missing a subject", crb(true, "role", user("a")), crb(true, "role", group("g")),
			crb(true, "role", user("a"), group("g")), true},
		{"binding to another role", crb(true, "old", user("a")), crb(true, "new", user("b")),
			&Recreate{Object: crb(true, "new", user("b"))}, true},
		{"protected binding to another role", protectedBinding, crb(true, "new", user("b")), nil, false},
		{"role binding missing a subject",
			roleRefBinding("ns", "b", roleRef("r"), user("a")), roleRefBinding("ns", "b", roleRef("r"), serviceAccount("ns", "sa")),
			roleRefBinding("ns", "b", roleRef("r"), user("a"), serviceAccount("ns", "sa")), true},
		{"kinds differ", cr(true, getPods), role("ns", "r", getSecrets), nil, false},
		{"system:node loses the group system:nodes", nodeBinding(nodesGroup), nodeBinding(), nodeBinding(), true},
		{"system:node loses the group without API group", nodeBinding(legacyNodesGroup), nodeBinding(), nodeBinding(), true},
		{"system:node keeps what an administrator bound", nodeBinding(user("a"), nodesGroup, group("g")), nodeBinding(),
			nodeBinding(user("a"), group("g")), true},
		{"system:node up to date", nodeBinding(), nodeBinding(), nil, false},
		{"protected system:node keeps the group", protectedNodeBinding, nodeBinding(), nil, false},
		{"another binding keeps the group", otherBinding, clusterBindingNamed("other", "system:node"), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := tt.existing.DeepCopyObject()
			desiredBefore := tt.desired.DeepCopyObject()
			got, changed := Reconcile(tt.existing, tt.desired)
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			want := tt.want
			if want == nil {
				want = before
			}
			if !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("Reconcile =\n%#v\nwant\n%#v", got, want)
			}
			if !equality.Semantic.DeepEqual(tt.existing, before) || !equality.Semantic.DeepEqual(tt.desired, desiredBefore) {
				t.Error("Reconcile modified its arguments")
			}
		})
	}
}

func clusterBindingNamed(name, roleName string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	b := clusterBinding(roleName, subjects...)
	b.Name = name
	addBootstrapMetadata(&b.ObjectMeta)
	return b
}

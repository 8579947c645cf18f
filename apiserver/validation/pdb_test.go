package validation

import (
	"strings"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func validBudget() *policyv1.PodDisruptionBudget {
	two := intstr.FromInt32(2)
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "3"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &two, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
}

func TestValidatePodDisruptionBudget(t *testing.T) {
	t.Parallel()
	iv := func(v intstr.IntOrString) *intstr.IntOrString { return &v }
	policy := func(p policyv1.UnhealthyPodEvictionPolicyType) *policyv1.UnhealthyPodEvictionPolicyType { return &p }
	tests := []struct {
		name   string
		mutate func(*policyv1.PodDisruptionBudget)
		want   []string // substrings of the errors, in order; none: valid
	}{
		{name: "valid"},
		{name: "percent", mutate: func(b *policyv1.PodDisruptionBudget) { b.Spec.MinAvailable = iv(intstr.FromString("100%")) }},
		{name: "maxUnavailable 0", mutate: func(b *policyv1.PodDisruptionBudget) {
			b.Spec.MinAvailable, b.Spec.MaxUnavailable = nil, iv(intstr.FromInt32(0))
		}},
		{name: "no selector", mutate: func(b *policyv1.PodDisruptionBudget) { b.Spec.Selector = nil }},
		{name: "policies", mutate: func(b *policyv1.PodDisruptionBudget) {
			b.Spec.UnhealthyPodEvictionPolicy = policy(policyv1.AlwaysAllow)
		}},
		{name: "both set", mutate: func(b *policyv1.PodDisruptionBudget) { b.Spec.MaxUnavailable = iv(intstr.FromInt32(1)) },
			want: []string{"spec: Invalid value", "minAvailable and maxUnavailable cannot be both set"}},
		{name: "negative", mutate: func(b *policyv1.PodDisruptionBudget) { b.Spec.MinAvailable = iv(intstr.FromInt32(-1)) },
			want: []string{"spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"}},
		{name: "over 100%", mutate: func(b *policyv1.PodDisruptionBudget) {
			b.Spec.MinAvailable, b.Spec.MaxUnavailable = nil, iv(intstr.FromString("150%"))
		}, want: []string{"spec.maxUnavailable: Invalid value", "must not be greater than 100%"}},
		{name: "not a percent", mutate: func(b *policyv1.PodDisruptionBudget) { b.Spec.MinAvailable = iv(intstr.FromString("half")) },
			want: []string{"spec.minAvailable: Invalid value", "a valid percent string must be a numeric string followed by an ending '%'"}},
		{name: "bad selector", mutate: func(b *policyv1.PodDisruptionBudget) {
			b.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
		}, want: []string{"spec.selector.matchExpressions[0].operator: Invalid value: \"Near\""}},
		{name: "unknown policy", mutate: func(b *policyv1.PodDisruptionBudget) { b.Spec.UnhealthyPodEvictionPolicy = policy("Sometimes") },
			want: []string{`spec.unhealthyPodEvictionPolicy: Unsupported value: "Sometimes": supported values: "AlwaysAllow", "IfHealthyBudget"`}},
		{name: "bad name", mutate: func(b *policyv1.PodDisruptionBudget) { b.Name = "Web" }, want: []string{"metadata.name: Invalid value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := validBudget()
			if tt.mutate != nil {
				tt.mutate(b)
			}
			errs := ValidateCreate(b)
			if len(tt.want) == 0 {
				if len(errs) != 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			got := errs.ToAggregate()
			if got == nil {
				t.Fatalf("no errors, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(got.Error(), w) {
					t.Errorf("errors %q lack %q", got.Error(), w)
				}
			}
		})
	}
}

func TestValidatePodDisruptionBudgetUpdate(t *testing.T) {
	t.Parallel()
	old := validBudget()
	// The spec of a policy/v1 budget may change.
	b := validBudget()
	b.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
	if errs := ValidateUpdate(b, old); len(errs) != 0 {
		t.Fatalf("spec change: %v", errs)
	}
	b = validBudget()
	b.Status.DisruptionsAllowed = -1
	errs := ValidateSubresourceUpdate(b, old, "status")
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "status.disruptionsAllowed: Invalid value: -1") {
		t.Fatalf("negative status: %v", errs)
	}
	b = validBudget()
	b.Status.Conditions = []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: "Maybe", Reason: "X"}}
	if errs := ValidateSubresourceUpdate(b, old, "status"); len(errs) == 0 {
		t.Fatal("an invalid condition passed")
	}
}

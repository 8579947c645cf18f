package defaults

import (
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestDefaultPodDisruptionBudget(t *testing.T) {
	t.Parallel()
	two, zero := intstr.FromInt32(2), intstr.FromInt32(0)
	tests := []struct {
		name             string
		spec             policyv1.PodDisruptionBudgetSpec
		wantMin, wantMax *intstr.IntOrString
	}{
		{name: "neither set keeps one available", wantMin: &[]intstr.IntOrString{intstr.FromInt32(1)}[0]},
		{name: "minAvailable kept", spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &two}, wantMin: &two},
		{name: "maxUnavailable alone", spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero}, wantMax: &zero},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pdb := &policyv1.PodDisruptionBudget{Spec: tt.spec}
			Default(pdb)
			same := func(a, b *intstr.IntOrString) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
			if !same(pdb.Spec.MinAvailable, tt.wantMin) || !same(pdb.Spec.MaxUnavailable, tt.wantMax) {
				t.Fatalf("spec %+v, want min %v max %v", pdb.Spec, tt.wantMin, tt.wantMax)
			}
		})
	}
}

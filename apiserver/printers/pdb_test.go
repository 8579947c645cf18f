package printers

import (
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestPodDisruptionBudgetPrinter(t *testing.T) {
	t.Parallel()
	gk := schema.GroupKind{Group: "policy", Kind: "PodDisruptionBudget"}
	if got, want := headers(For(gk).Columns, true), "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE"; got != want {
		t.Fatalf("columns %q, want %q", got, want)
	}
	two, half := intstr.FromInt32(2), intstr.FromString("50%")
	tests := []struct {
		name string
		pdb  policyv1.PodDisruptionBudget
		want []interface{}
	}{
		{name: "minAvailable", pdb: policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: ago(3 * time.Minute)},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &two}, Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}},
			want: []interface{}{"web", "2", "N/A", int64(1), "3m"}},
		{name: "maxUnavailable percent", pdb: policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db"},
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &half}},
			want: []interface{}{"db", "N/A", "50%", int64(0), "<unknown>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := cellsFor(t, gk, &tt.pdb)
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Errorf("cell %d = %#v, want %#v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

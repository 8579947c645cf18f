package printers

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestClusterCells(t *testing.T) {
	t.Parallel()
	holder := "kube-scheduler-node-a_1234"
	never := corev1.PreemptNever
	meta := metav1.ObjectMeta{Name: "x", CreationTimestamp: ago(26 * time.Hour)}
	lease := schema.GroupKind{Group: "coordination.k8s.io", Kind: "Lease"}
	priority := schema.GroupKind{Group: "scheduling.k8s.io", Kind: "PriorityClass"}
	tests := []struct {
		name string
		gk   schema.GroupKind
		obj  runtime.Object
		want []interface{}
	}{
		{"held lease", lease, &coordinationv1.Lease{ObjectMeta: meta, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}},
			[]interface{}{"x", holder, "26h"}},
		{"free lease", lease, &coordinationv1.Lease{ObjectMeta: meta},
			[]interface{}{"x", "", "26h"}},
		{"default priority class", priority, &schedulingv1.PriorityClass{ObjectMeta: meta, Value: 1000, GlobalDefault: true, PreemptionPolicy: &never},
			[]interface{}{"x", int64(1000), true, "26h", "Never"}},
		{"system priority class", priority, &schedulingv1.PriorityClass{ObjectMeta: meta, Value: 2000001000},
			[]interface{}{"x", int64(2000001000), false, "26h", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := cellsFor(t, tt.gk, tt.obj)
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Errorf("cell %d = %#v, want %#v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

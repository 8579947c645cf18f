package defaults

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestDefaultDaemonSet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		strategy    appsv1.DaemonSetUpdateStrategy
		history     *int32
		want        appsv1.DaemonSetUpdateStrategy
		wantHistory int32
	}{
		{"empty: RollingUpdate 1/0", appsv1.DaemonSetUpdateStrategy{}, nil,
			appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{
				MaxUnavailable: new(intstr.FromInt32(1)), MaxSurge: new(intstr.FromInt32(0))}}, 10},
		{"surge kept, unavailable filled", appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxSurge: new(intstr.FromString("10%"))}}, new(int32(3)),
			appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{
				MaxUnavailable: new(intstr.FromInt32(1)), MaxSurge: new(intstr.FromString("10%"))}}, 3},
		{"OnDelete untouched", appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}, nil,
			appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ds := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{UpdateStrategy: tt.strategy, RevisionHistoryLimit: tt.history,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "a"}}}}}}
			Default(ds)
			got := ds.Spec.UpdateStrategy
			if got.Type != tt.want.Type || (got.RollingUpdate == nil) != (tt.want.RollingUpdate == nil) {
				t.Fatalf("strategy %+v, want %+v", got, tt.want)
			}
			if ru := got.RollingUpdate; ru != nil && (*ru.MaxUnavailable != *tt.want.RollingUpdate.MaxUnavailable || *ru.MaxSurge != *tt.want.RollingUpdate.MaxSurge) {
				t.Errorf("rollingUpdate %v/%v, want %v/%v", ru.MaxUnavailable, ru.MaxSurge, tt.want.RollingUpdate.MaxUnavailable, tt.want.RollingUpdate.MaxSurge)
			}
			if *ds.Spec.RevisionHistoryLimit != tt.wantHistory {
				t.Errorf("revisionHistoryLimit %d, want %d", *ds.Spec.RevisionHistoryLimit, tt.wantHistory)
			}
			if ds.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways || ds.Spec.Template.Spec.Containers[0].ImagePullPolicy == "" {
				t.Errorf("the pod template was not defaulted: %+v", ds.Spec.Template.Spec)
			}
		})
	}
}

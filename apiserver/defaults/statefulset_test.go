package defaults

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDefaultStatefulSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		in    appsv1.StatefulSetSpec
		check func(t *testing.T, s appsv1.StatefulSetSpec)
	}{
		{"empty", appsv1.StatefulSetSpec{VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}},
			func(t *testing.T, s appsv1.StatefulSetSpec) {
				if s.PodManagementPolicy != appsv1.OrderedReadyPodManagement || s.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType ||
					s.UpdateStrategy.RollingUpdate == nil || *s.UpdateStrategy.RollingUpdate.Partition != 0 || s.UpdateStrategy.RollingUpdate.MaxUnavailable != nil {
					t.Fatalf("strategy = %+v %+v", s.PodManagementPolicy, s.UpdateStrategy)
				}
				if p := s.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType || p.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
					t.Fatalf("retention = %+v", p)
				}
				if *s.Replicas != 1 || *s.RevisionHistoryLimit != 10 {
					t.Fatalf("replicas %d history %d", *s.Replicas, *s.RevisionHistoryLimit)
				}
				c := s.VolumeClaimTemplates[0]
				if *c.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || c.Status.Phase != corev1.ClaimPending {
					t.Fatalf("claim template = %+v", c)
				}
				if s.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
					t.Fatalf("pod template not defaulted: %+v", s.Template.Spec)
				}
			}},
		{"OnDelete keeps no rolling update", appsv1.StatefulSetSpec{UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}},
			func(t *testing.T, s appsv1.StatefulSetSpec) {
				if s.UpdateStrategy.RollingUpdate != nil {
					t.Fatalf("rollingUpdate = %+v", s.UpdateStrategy.RollingUpdate)
				}
			}},
		{"explicit RollingUpdate without parameters gets none", appsv1.StatefulSetSpec{UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}},
			func(t *testing.T, s appsv1.StatefulSetSpec) {
				if s.UpdateStrategy.RollingUpdate != nil {
					t.Fatalf("rollingUpdate = %+v", s.UpdateStrategy.RollingUpdate)
				}
			}},
		{"partition kept", appsv1.StatefulSetSpec{UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
			Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: new(int32(2))}}},
			func(t *testing.T, s appsv1.StatefulSetSpec) {
				if *s.UpdateStrategy.RollingUpdate.Partition != 2 {
					t.Fatalf("partition = %d", *s.UpdateStrategy.RollingUpdate.Partition)
				}
			}},
		{"policy kept", appsv1.StatefulSetSpec{Replicas: new(int32(0)), PodManagementPolicy: appsv1.ParallelPodManagement,
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}},
			func(t *testing.T, s appsv1.StatefulSetSpec) {
				p := s.PersistentVolumeClaimRetentionPolicy
				if *s.Replicas != 0 || s.PodManagementPolicy != appsv1.ParallelPodManagement ||
					p.WhenScaled != appsv1.DeletePersistentVolumeClaimRetentionPolicyType || p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
					t.Fatalf("spec = %+v", s)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &appsv1.StatefulSet{Spec: tc.in}
			Default(s)
			tc.check(t, s.Spec)
		})
	}
}

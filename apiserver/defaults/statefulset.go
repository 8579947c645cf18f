package defaults

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// defaultStatefulSet fills a StatefulSet's defaults as upstream:
// OrderedReady pod management, RollingUpdate with partition 0, claims
// retained when the set is deleted or scaled down, one replica, a history
// of 10 revisions, the pod template's defaults, and the claim templates'
// (Filesystem volume mode, phase Pending).
func defaultStatefulSet(s *appsv1.StatefulSet) {
	spec := &s.Spec
	if spec.PodManagementPolicy == "" {
		spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if spec.UpdateStrategy.RollingUpdate == nil {
			spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if ru := spec.UpdateStrategy.RollingUpdate; spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru != nil && ru.Partition == nil {
		ru.Partition = new(int32(0))
	}
	if spec.PersistentVolumeClaimRetentionPolicy == nil {
		spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted == "" {
		p.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p.WhenScaled == "" {
		p.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if spec.Replicas == nil {
		spec.Replicas = new(int32(1))
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = new(int32(10))
	}
	defaultPodTemplateSpec(&spec.Template)
	for i := range spec.VolumeClaimTemplates {
		c := &spec.VolumeClaimTemplates[i]
		if c.Spec.VolumeMode == nil {
			c.Spec.VolumeMode = new(corev1.PersistentVolumeFilesystem)
		}
		if c.Status.Phase == "" {
			c.Status.Phase = corev1.ClaimPending
		}
	}
}

package defaults

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// defaultDaemonSet fills a DaemonSet's defaults as upstream: RollingUpdate
// with maxUnavailable 1 and maxSurge 0, a history of 10 revisions, and
// the pod template's defaults.
func defaultDaemonSet(ds *appsv1.DaemonSet) {
	spec := &ds.Spec
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if spec.UpdateStrategy.RollingUpdate == nil {
			spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		ru := spec.UpdateStrategy.RollingUpdate
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = new(intstr.FromInt32(1))
		}
		if ru.MaxSurge == nil {
			ru.MaxSurge = new(intstr.FromInt32(0))
		}
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = new(int32(10))
	}
	defaultPodTemplateSpec(&spec.Template)
}

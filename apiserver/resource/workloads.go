package resource

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/apiserver/defaults"
)

// workloadRows are the workload kinds besides Deployments and
// ReplicaSets: StatefulSets, DaemonSets and their ControllerRevisions,
// Jobs and CronJobs, and PodDisruptionBudgets.
func workloadRows() []*Resource {
	apps := func(kind string) schema.GroupVersionKind { return appsv1.SchemeGroupVersion.WithKind(kind) }
	batch := func(kind string) schema.GroupVersionKind { return batchv1.SchemeGroupVersion.WithKind(kind) }
	return []*Resource{
		{GVK: apps("StatefulSet"), Plural: "statefulsets", Singular: "statefulset", Namespaced: true,
			ShortNames: []string{"sts"}, Categories: []string{"all"}, Subresources: []Subresource{Status, Scale}, HasGeneration: true,
			New: func() runtime.Object { return &appsv1.StatefulSet{} }, NewList: func() runtime.Object { return &appsv1.StatefulSetList{} },
			PrepareForCreate: func(o runtime.Object) { o.(*appsv1.StatefulSet).Status = appsv1.StatefulSetStatus{} },
			Scale: &ScaleAccess{
				Get: func(o runtime.Object) (int32, int32, string) {
					s := o.(*appsv1.StatefulSet)
					return replicas(s.Spec.Replicas), s.Status.Replicas, selectorString(s.Spec.Selector)
				},
				Set: func(o runtime.Object, n int32) { o.(*appsv1.StatefulSet).Spec.Replicas = &n },
			}},
		{GVK: apps("DaemonSet"), Plural: "daemonsets", Singular: "daemonset", Namespaced: true,
			ShortNames: []string{"ds"}, Categories: []string{"all"}, Subresources: []Subresource{Status}, HasGeneration: true,
			New: func() runtime.Object { return &appsv1.DaemonSet{} }, NewList: func() runtime.Object { return &appsv1.DaemonSetList{} },
			PrepareForCreate: func(o runtime.Object) { o.(*appsv1.DaemonSet).Status = appsv1.DaemonSetStatus{} }},
		{GVK: apps("ControllerRevision"), Plural: "controllerrevisions", Singular: "controllerrevision", Namespaced: true,
			New: func() runtime.Object { return &appsv1.ControllerRevision{} }, NewList: func() runtime.Object { return &appsv1.ControllerRevisionList{} }},
		{GVK: batch("Job"), Plural: "jobs", Singular: "job", Namespaced: true,
			Categories: []string{"all"}, Subresources: []Subresource{Status}, HasGeneration: true,
			New: func() runtime.Object { return &batchv1.Job{} }, NewList: func() runtime.Object { return &batchv1.JobList{} },
			PrepareForCreate: func(o runtime.Object) {
				o.(*batchv1.Job).Status = batchv1.JobStatus{}
				defaults.GenerateJobSelector(o.(*batchv1.Job))
			},
			Fields: func(o runtime.Object) fields.Set {
				return fields.Set{"status.successful": strconv.Itoa(int(o.(*batchv1.Job).Status.Succeeded))}
			}},
		{GVK: batch("CronJob"), Plural: "cronjobs", Singular: "cronjob", Namespaced: true,
			ShortNames: []string{"cj"}, Categories: []string{"all"}, Subresources: []Subresource{Status}, HasGeneration: true,
			New: func() runtime.Object { return &batchv1.CronJob{} }, NewList: func() runtime.Object { return &batchv1.CronJobList{} },
			PrepareForCreate: func(o runtime.Object) { o.(*batchv1.CronJob).Status = batchv1.CronJobStatus{} }},
		{GVK: policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), Plural: "poddisruptionbudgets", Singular: "poddisruptionbudget", Namespaced: true,
			ShortNames: []string{"pdb"}, Subresources: []Subresource{Status}, HasGeneration: true,
			New: func() runtime.Object { return &policyv1.PodDisruptionBudget{} }, NewList: func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} },
			PrepareForCreate: func(o runtime.Object) {
				o.(*policyv1.PodDisruptionBudget).Status = policyv1.PodDisruptionBudgetStatus{}
			}},
	}
}

// storageRows are PersistentVolumes, PersistentVolumeClaims and
// StorageClasses.
func storageRows() []*Resource {
	core := func(kind string) schema.GroupVersionKind { return corev1.SchemeGroupVersion.WithKind(kind) }
	return []*Resource{
		{GVK: core("PersistentVolume"), Plural: "persistentvolumes", Singular: "persistentvolume", ShortNames: []string{"pv"},
			Subresources: []Subresource{Status},
			New:          func() runtime.Object { return &corev1.PersistentVolume{} }, NewList: func() runtime.Object { return &corev1.PersistentVolumeList{} },
			PrepareForCreate: func(o runtime.Object) {
				o.(*corev1.PersistentVolume).Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending}
			}},
		{GVK: core("PersistentVolumeClaim"), Plural: "persistentvolumeclaims", Singular: "persistentvolumeclaim", Namespaced: true,
			ShortNames: []string{"pvc"}, Subresources: []Subresource{Status},
			New: func() runtime.Object { return &corev1.PersistentVolumeClaim{} }, NewList: func() runtime.Object { return &corev1.PersistentVolumeClaimList{} },
			PrepareForCreate: func(o runtime.Object) {
				o.(*corev1.PersistentVolumeClaim).Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
			}},
		{GVK: storagev1.SchemeGroupVersion.WithKind("StorageClass"), Plural: "storageclasses", Singular: "storageclass", ShortNames: []string{"sc"},
			New: func() runtime.Object { return &storagev1.StorageClass{} }, NewList: func() runtime.Object { return &storagev1.StorageClassList{} }},
	}
}

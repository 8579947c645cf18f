package defaults

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Default fills defaults into obj in place, as the upstream API server does
// on create and update. Kinds without defaults (Node, Event, ConfigMap,
// ServiceAccount, Lease, ...) and unknown kinds are left untouched.
func Default(obj runtime.Object) {
	switch o := obj.(type) {
	case *corev1.Pod:
		defaultPod(o)
	case *corev1.PodTemplate:
		defaultPodTemplateSpec(&o.Template)
	case *appsv1.Deployment:
		defaultDeployment(o)
	case *appsv1.ReplicaSet:
		defaultReplicaSet(o)
	case *appsv1.DaemonSet:
		defaultDaemonSet(o)
	case *batchv1.Job:
		defaultJob(o)
	case *batchv1.CronJob:
		defaultCronJob(o)
	case *appsv1.StatefulSet:
		defaultStatefulSet(o)
	case *policyv1.PodDisruptionBudget:
		defaultPodDisruptionBudget(o)
	case *corev1.Service:
		defaultService(o)
	case *corev1.Endpoints:
		defaultEndpoints(o)
	case *discoveryv1.EndpointSlice:
		defaultEndpointSlice(o)
	case *corev1.Namespace:
		defaultNamespace(o)
	case *corev1.Secret:
		defaultSecret(o)
	case *rbacv1.RoleBinding:
		defaultSubjects(o.Subjects)
	case *rbacv1.ClusterRoleBinding:
		defaultSubjects(o.Subjects)
	case *corev1.PersistentVolume:
		defaultPersistentVolume(o)
	case *corev1.PersistentVolumeClaim:
		defaultPersistentVolumeClaim(o)
	case *corev1.LimitRange:
		defaultLimitRange(o)
	case *storagev1.StorageClass:
		defaultStorageClass(o)
	case *schedulingv1.PriorityClass:
		if o.PreemptionPolicy == nil {
			o.PreemptionPolicy = new(corev1.PreemptLowerPriority)
		}
	}
}

// defaultNamespace labels a namespace with its name and makes it Active.
// A namespace seen for the first time (no phase yet) also gets the
// "kubernetes" finalizer that keeps it until its content is deleted; a
// namespace with a phase keeps the finalizers it has, so that finalizing it
// is not undone.
func defaultNamespace(ns *corev1.Namespace) {
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		if !hasFinalizer(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
			ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
		}
		ns.Status.Phase = corev1.NamespaceActive
	}
}

// defaultSecret makes a secret Opaque unless typed, and moves stringData,
// which is write-only, into data; a key in both takes the stringData value.
func defaultSecret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 && s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

func hasFinalizer(list []corev1.FinalizerName, f corev1.FinalizerName) bool {
	for _, have := range list {
		if have == f {
			return true
		}
	}
	return false
}

func defaultDeployment(d *appsv1.Deployment) {
	spec := &d.Spec
	if spec.Replicas == nil {
		spec.Replicas = new(int32(1))
	}
	if spec.Strategy.Type == "" {
		spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if spec.Strategy.RollingUpdate == nil {
			spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		ru := spec.Strategy.RollingUpdate
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = new(intstr.FromString("25%"))
		}
		if ru.MaxSurge == nil {
			ru.MaxSurge = new(intstr.FromString("25%"))
		}
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = new(int32(10))
	}
	if spec.ProgressDeadlineSeconds == nil {
		spec.ProgressDeadlineSeconds = new(int32(600))
	}
	defaultPodTemplateSpec(&spec.Template)
}

func defaultReplicaSet(rs *appsv1.ReplicaSet) {
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = new(int32(1))
	}
	defaultPodTemplateSpec(&rs.Spec.Template)
}

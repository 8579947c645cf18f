package validation

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateCreate validates a new object (metadata and spec). Kinds it does
// not know are accepted as they are.
func ValidateCreate(obj runtime.Object) field.ErrorList {
	switch o := obj.(type) {
	case *corev1.Pod:
		return validatePod(o)
	case *corev1.PodTemplate:
		return validatePodTemplate(o)
	case *appsv1.Deployment:
		return validateDeployment(o)
	case *appsv1.ReplicaSet:
		return validateReplicaSet(o)
	case *appsv1.DaemonSet:
		return validateDaemonSet(o)
	case *batchv1.CronJob:
		return validateCronJob(o)
	case *batchv1.Job:
		return validateJob(o)
	case *appsv1.StatefulSet:
		return validateStatefulSet(o)
	case *appsv1.ControllerRevision:
		return validateControllerRevision(o)
	case *policyv1.PodDisruptionBudget:
		return validatePodDisruptionBudget(o)
	case *corev1.PersistentVolume:
		return validatePersistentVolume(o)
	case *corev1.PersistentVolumeClaim:
		return validatePersistentVolumeClaim(o)
	case *storagev1.StorageClass:
		return validateStorageClass(o)
	case *corev1.Service:
		return validateService(o)
	case *corev1.Endpoints:
		return validateEndpoints(o)
	case *discoveryv1.EndpointSlice:
		return validateEndpointSlice(o)
	case *corev1.ConfigMap:
		return validateConfigMap(o)
	case *corev1.Secret:
		return validateSecret(o)
	case *corev1.ServiceAccount:
		return validateMeta(&o.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	case *corev1.Namespace:
		return validateNamespace(o)
	case *corev1.Node:
		return validateNode(o)
	case *coordinationv1.Lease:
		return validateLease(o)
	case *schedulingv1.PriorityClass:
		return validatePriorityClass(o)
	case *corev1.Event:
		return validateEvent(o)
	case *corev1.LimitRange:
		return validateLimitRange(o)
	case *corev1.ResourceQuota:
		return validateResourceQuota(o)
	case *certificatesv1.CertificateSigningRequest:
		return validateCSR(o)
	case *rbacv1.Role:
		return validateRole(o)
	case *rbacv1.ClusterRole:
		return validateClusterRole(o)
	case *rbacv1.RoleBinding:
		return validateRoleBinding(o)
	case *rbacv1.ClusterRoleBinding:
		return validateClusterRoleBinding(o)
	}
	return nil
}

// ValidateUpdate validates obj replacing old: everything ValidateCreate
// checks plus immutable fields. obj and old must be of the same kind.
func ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	var errs field.ErrorList
	switch o := obj.(type) {
	case *corev1.Pod:
		errs = update(o, old, validatePodUpdate)
	case *corev1.PodTemplate:
		errs = update(o, old, func(o, old *corev1.PodTemplate) field.ErrorList {
			return append(validateMetaUpdate(&o.ObjectMeta, &old.ObjectMeta), validatePodTemplate(o)...)
		})
	case *appsv1.Deployment:
		errs = update(o, old, validateDeploymentUpdate)
	case *appsv1.ReplicaSet:
		errs = update(o, old, validateReplicaSetUpdate)
	case *appsv1.DaemonSet:
		errs = update(o, old, validateDaemonSetUpdate)
	case *batchv1.CronJob:
		errs = update(o, old, validateCronJobUpdate)
	case *batchv1.Job:
		errs = update(o, old, validateJobUpdate)
	case *appsv1.StatefulSet:
		errs = update(o, old, validateStatefulSetUpdate)
	case *appsv1.ControllerRevision:
		errs = update(o, old, validateControllerRevisionUpdate)
	case *policyv1.PodDisruptionBudget:
		errs = update(o, old, validatePodDisruptionBudgetUpdate)
	case *corev1.PersistentVolume:
		errs = update(o, old, validatePersistentVolumeUpdate)
	case *corev1.PersistentVolumeClaim:
		errs = update(o, old, validatePersistentVolumeClaimUpdate)
	case *storagev1.StorageClass:
		errs = update(o, old, validateStorageClassUpdate)
	case *corev1.Service:
		errs = update(o, old, validateServiceUpdate)
	case *corev1.Endpoints:
		errs = update(o, old, func(o, old *corev1.Endpoints) field.ErrorList {
			return append(validateMetaUpdate(&o.ObjectMeta, &old.ObjectMeta), validateEndpoints(o)...)
		})
	case *discoveryv1.EndpointSlice:
		errs = update(o, old, validateEndpointSliceUpdate)
	case *corev1.ConfigMap:
		errs = update(o, old, validateConfigMapUpdate)
	case *corev1.Secret:
		errs = update(o, old, validateSecretUpdate)
	case *corev1.ServiceAccount:
		errs = update(o, old, func(o, old *corev1.ServiceAccount) field.ErrorList {
			return append(validateMetaUpdate(&o.ObjectMeta, &old.ObjectMeta), ValidateCreate(o)...)
		})
	case *corev1.Namespace:
		errs = update(o, old, func(o, old *corev1.Namespace) field.ErrorList {
			return append(validateMetaUpdate(&o.ObjectMeta, &old.ObjectMeta), validateNamespace(o)...)
		})
	case *corev1.Node:
		errs = update(o, old, validateNodeUpdate)
	case *coordinationv1.Lease:
		errs = update(o, old, func(o, old *coordinationv1.Lease) field.ErrorList {
			return append(validateMetaUpdate(&o.ObjectMeta, &old.ObjectMeta), validateLease(o)...)
		})
	case *schedulingv1.PriorityClass:
		errs = update(o, old, validatePriorityClassUpdate)
	case *corev1.Event:
		errs = update(o, old, func(o, old *corev1.Event) field.ErrorList {
			return append(validateMetaUpdate(&o.ObjectMeta, &old.ObjectMeta), validateEvent(o)...)
		})
	case *rbacv1.Role:
		errs = update(o, old, validateRoleUpdate)
	case *rbacv1.ClusterRole:
		errs = update(o, old, validateClusterRoleUpdate)
	case *rbacv1.RoleBinding:
		errs = update(o, old, validateRoleBindingUpdate)
	case *rbacv1.ClusterRoleBinding:
		errs = update(o, old, validateClusterRoleBindingUpdate)
	case *corev1.LimitRange:
		errs = update(o, old, validateLimitRangeUpdate)
	case *corev1.ResourceQuota:
		errs = update(o, old, validateResourceQuotaUpdate)
	case *certificatesv1.CertificateSigningRequest:
		errs = update(o, old, validateCSRUpdate)
	}
	return dedupe(errs)
}

// ValidateSubresourceUpdate validates a change made through a
// subresource: a CSR's status (the signer sets the certificate) and
// approval (the approver adds conditions) allow what its main resource
// does not; a pod's status is validated without its spec, which the write
// keeps as stored (validatePodStatusUpdate); every other kind is validated
// as by ValidateUpdate.
func ValidateSubresourceUpdate(obj, old runtime.Object, sub string) field.ErrorList {
	if o, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
		switch sub {
		case "status":
			return dedupe(update(o, old, validateCSRStatusUpdate))
		case "approval":
			return dedupe(update(o, old, validateCSRApprovalUpdate))
		}
	}
	if o, ok := obj.(*corev1.Pod); ok && sub == "status" {
		return dedupe(update(o, old, validatePodStatusUpdate))
	}
	return ValidateUpdate(obj, old)
}

// update runs fn when old is of obj's kind and reports a mismatch otherwise.
func update[T runtime.Object](obj T, old runtime.Object, fn func(obj, old T) field.ErrorList) field.ErrorList {
	o, ok := old.(T)
	if !ok {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("cannot validate an update of %T from %T", obj, old))}
	}
	return fn(obj, o)
}

// dedupe drops repeated errors: an update validates the new metadata both as
// a change and as an object, which reports a bad label twice.
func dedupe(errs field.ErrorList) field.ErrorList {
	if len(errs) < 2 {
		return errs
	}
	seen := make(map[string]bool, len(errs))
	out := errs[:0:0]
	for _, e := range errs {
		key := e.Error()
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, e)
	}
	return out
}

var metadataPath = field.NewPath("metadata")

// validateMeta validates the metadata of a new object: name (by nameFn),
// namespace (required when namespaced, forbidden otherwise), labels,
// annotations, owner references and finalizers.
func validateMeta(meta *metav1.ObjectMeta, namespaced bool, nameFn apivalidation.ValidateNameFunc) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(meta, namespaced, nameFn, metadataPath)
	return append(errs, validateKubeFinalizers(meta.Finalizers, metadataPath.Child("finalizers"))...)
}

// validateMetaUpdate validates a change of metadata: name, namespace, uid and
// creation time are immutable and the resourceVersion must be given.
func validateMetaUpdate(meta, old *metav1.ObjectMeta) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(meta, old, metadataPath)
	return append(errs, validateKubeFinalizers(meta.Finalizers, metadataPath.Child("finalizers"))...)
}

// standardFinalizers are the finalizer names that need no domain.
var standardFinalizers = map[string]bool{
	string(corev1.FinalizerKubernetes): true,
	metav1.FinalizerOrphanDependents:   true,
	metav1.FinalizerDeleteDependents:   true,
}

// validateKubeFinalizers requires a finalizer name without a domain to be
// one of the standard ones.
func validateKubeFinalizers(finalizers []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, f := range finalizers {
		errs = append(errs, validateKubeFinalizer(f, path.Index(i))...)
	}
	return errs
}

func validateKubeFinalizer(f string, path *field.Path) field.ErrorList {
	if !strings.Contains(f, "/") && !standardFinalizers[f] {
		return field.ErrorList{field.Invalid(path, f, "name is neither a standard finalizer name nor is it fully qualified")}
	}
	return nil
}

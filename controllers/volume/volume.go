// Package volume holds what the volume controllers share: the annotation
// and finalizer names upstream's PersistentVolume controller, provisioners
// and protection controllers agree on, and small pure helpers over claims,
// volumes and classes. The controllers themselves are in binder (the
// PersistentVolume binder and reclaimer), localpath (the built-in
// kubebus.io/local-path provisioner and its default StorageClass) and
// protection (the pvc-protection and pv-protection finalizers).
package volume

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebus/kubebus/bus/informer"
)

// Lister is the read side of a bus-fed cache the volume controllers use;
// the shared informers (cache.Informers) have it.
type Lister[T runtime.Object] interface {
	Get(namespace, name string) (T, bool)
	List() []T
	ListNamespace(namespace string) []T
	AddHandler(h informer.Handler[T])
}

var (
	_ Lister[*corev1.PersistentVolume]      = (*informer.Informer[*corev1.PersistentVolume])(nil)
	_ Lister[*corev1.PersistentVolumeClaim] = (*informer.Informer[*corev1.PersistentVolumeClaim])(nil)
	_ Lister[*storagev1.StorageClass]       = (*informer.Informer[*storagev1.StorageClass])(nil)
	_ Lister[*corev1.Node]                  = (*informer.Informer[*corev1.Node])(nil)
	_ Lister[*corev1.Pod]                   = (*informer.Informer[*corev1.Pod])(nil)
)

// Annotations, as upstream spells them.
const (
	// AnnSelectedNode names the node the scheduler placed a
	// WaitForFirstConsumer claim's first pod on.
	AnnSelectedNode = "volume.kubernetes.io/selected-node"
	// AnnStorageProvisioner (and its beta twin) names the provisioner the
	// binder asks to provision a claim it found no volume for.
	AnnStorageProvisioner     = "volume.kubernetes.io/storage-provisioner"
	AnnBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	// AnnBindCompleted marks a claim whose binding the binder finished.
	AnnBindCompleted = "pv.kubernetes.io/bind-completed"
	// AnnBoundByController marks a claimRef or volumeName the binder set
	// (rather than the user pre-binding).
	AnnBoundByController = "pv.kubernetes.io/bound-by-controller"
	// AnnProvisionedBy names the provisioner that created a volume.
	AnnProvisionedBy = "pv.kubernetes.io/provisioned-by"
	// AnnDefaultClass marks the cluster's default StorageClass.
	AnnDefaultClass     = "storageclass.kubernetes.io/is-default-class"
	AnnBetaDefaultClass = "storageclass.beta.kubernetes.io/is-default-class"
)

// Finalizers.
const (
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	PVProtectionFinalizer  = "kubernetes.io/pv-protection"
)

// ClaimClass is the class a claim asks for: the beta annotation, else
// spec.storageClassName; "" is no class.
func ClaimClass(pvc *corev1.PersistentVolumeClaim) string {
	if c, ok := pvc.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		return c
	}
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}

// VolumeClass is the class of a volume: the beta annotation, else
// spec.storageClassName.
func VolumeClass(pv *corev1.PersistentVolume) string {
	if c, ok := pv.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		return c
	}
	return pv.Spec.StorageClassName
}

// IsDefaultClass reports whether sc carries the default-class annotation.
func IsDefaultClass(sc *storagev1.StorageClass) bool {
	return sc.Annotations[AnnDefaultClass] == "true" || sc.Annotations[AnnBetaDefaultClass] == "true"
}

// DefaultClass picks the default among classes: of several, the newest
// (then the first by name), as upstream; nil when there is none.
func DefaultClass(classes []*storagev1.StorageClass) *storagev1.StorageClass {
	var best *storagev1.StorageClass
	for _, sc := range classes {
		if !IsDefaultClass(sc) {
			continue
		}
		switch {
		case best == nil,
			sc.CreationTimestamp.After(best.CreationTimestamp.Time),
			sc.CreationTimestamp.Equal(&best.CreationTimestamp) && sc.Name < best.Name:
			best = sc
		}
	}
	return best
}

// IsWaitForFirstConsumer reports whether sc delays binding until a pod is
// scheduled.
func IsWaitForFirstConsumer(sc *storagev1.StorageClass) bool {
	return sc != nil && sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
}

// Request is a claim's storage request (zero when unset).
func Request(pvc *corev1.PersistentVolumeClaim) resource.Quantity {
	return pvc.Spec.Resources.Requests[corev1.ResourceStorage]
}

// IsBoundTo reports whether pv's claimRef names pvc (a claimRef without a
// UID names any claim of that namespace and name: a pre-binding).
func IsBoundTo(pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) bool {
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.Name != pvc.Name || ref.Namespace != pvc.Namespace {
		return false
	}
	return ref.UID == "" || ref.UID == pvc.UID
}

// PodClaims lists the claims a pod's volumes use, including the claims of
// its generic ephemeral volumes (named <pod>-<volume>).
func PodClaims(pod *corev1.Pod) []string {
	var out []string
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			out = append(out, pod.Name+"-"+v.Name)
		}
	}
	return out
}

// HasFinalizer reports whether finalizers holds f.
func HasFinalizer(finalizers []string, f string) bool {
	for _, have := range finalizers {
		if have == f {
			return true
		}
	}
	return false
}

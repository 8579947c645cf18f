package defaults

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// defaultPersistentVolume: a volume is retained when its claim goes, holds a
// filesystem, and starts Pending, as upstream.
func defaultPersistentVolume(pv *corev1.PersistentVolume) {
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		pv.Spec.VolumeMode = new(corev1.PersistentVolumeFilesystem)
	}
	if pv.Status.Phase == "" {
		pv.Status.Phase = corev1.VolumePending
	}
	if hp := pv.Spec.HostPath; hp != nil && hp.Type == nil {
		hp.Type = new(corev1.HostPathUnset)
	}
}

// defaultPersistentVolumeClaim: a claim asks for a filesystem and starts
// Pending.
func defaultPersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	if pvc.Spec.VolumeMode == nil {
		pvc.Spec.VolumeMode = new(corev1.PersistentVolumeFilesystem)
	}
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = corev1.ClaimPending
	}
}

// defaultStorageClass: a class deletes the volumes it provisioned when their
// claims go, and binds them at once.
func defaultStorageClass(sc *storagev1.StorageClass) {
	if sc.ReclaimPolicy == nil {
		sc.ReclaimPolicy = new(corev1.PersistentVolumeReclaimDelete)
	}
	if sc.VolumeBindingMode == nil {
		sc.VolumeBindingMode = new(storagev1.VolumeBindingImmediate)
	}
}

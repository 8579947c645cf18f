package printers

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Printers for PersistentVolumes, PersistentVolumeClaims and StorageClasses,
// with upstream's columns.

// Annotations that mark the cluster's default StorageClass.
const (
	annDefaultClass     = "storageclass.kubernetes.io/is-default-class"
	annBetaDefaultClass = "storageclass.beta.kubernetes.io/is-default-class"
)

func persistentVolumeColumns() []metav1.TableColumnDefinition {
	spec := corev1.PersistentVolumeSpec{}.SwaggerDoc()
	status := corev1.PersistentVolumeStatus{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Capacity", "string", spec["capacity"]),
		column("Access Modes", "string", spec["accessModes"]),
		column("Reclaim Policy", "string", spec["persistentVolumeReclaimPolicy"]),
		column("Status", "string", status["phase"]),
		column("Claim", "string", spec["claimRef"]),
		column("StorageClass", "string", "StorageClass of the pv"),
		column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
		column("Reason", "string", status["reason"]),
		ageColumn(),
		wideColumn("VolumeMode", "string", spec["volumeMode"]),
	}
}

func persistentVolumeCells(pv *corev1.PersistentVolume, now time.Time) []interface{} {
	claim := ""
	if ref := pv.Spec.ClaimRef; ref != nil {
		claim = ref.Namespace + "/" + ref.Name
	}
	size := pv.Spec.Capacity[corev1.ResourceStorage]
	phase := string(pv.Status.Phase)
	if pv.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	class, ok := pv.Annotations[corev1.BetaStorageClassAnnotation] // the beta annotation wins, as upstream
	if !ok {
		class = pv.Spec.StorageClassName
	}
	return []interface{}{
		pv.Name,
		size.String(),
		accessModesString(pv.Spec.AccessModes),
		string(pv.Spec.PersistentVolumeReclaimPolicy),
		phase,
		claim,
		class,
		unsetOr(pv.Spec.VolumeAttributesClassName),
		pv.Status.Reason,
		age(pv.CreationTimestamp, now),
		volumeModeString(pv.Spec.VolumeMode),
	}
}

func persistentVolumeClaimColumns() []metav1.TableColumnDefinition {
	spec := corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()
	status := corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Status", "string", status["phase"]),
		column("Volume", "string", spec["volumeName"]),
		column("Capacity", "string", status["capacity"]),
		column("Access Modes", "string", status["accessModes"]),
		column("StorageClass", "string", "StorageClass of the pvc"),
		column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
		ageColumn(),
		wideColumn("VolumeMode", "string", spec["volumeMode"]),
	}
}

func persistentVolumeClaimCells(pvc *corev1.PersistentVolumeClaim, now time.Time) []interface{} {
	phase := string(pvc.Status.Phase)
	if pvc.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	// Capacity and access modes are the bound volume's, shown once bound.
	capacity, modes := "", ""
	if pvc.Spec.VolumeName != "" {
		size := pvc.Status.Capacity[corev1.ResourceStorage]
		capacity, modes = size.String(), accessModesString(pvc.Status.AccessModes)
	}
	class, ok := pvc.Annotations[corev1.BetaStorageClassAnnotation]
	if !ok && pvc.Spec.StorageClassName != nil {
		class = *pvc.Spec.StorageClassName
	}
	return []interface{}{
		pvc.Name,
		phase,
		pvc.Spec.VolumeName,
		capacity,
		modes,
		class,
		unsetOr(pvc.Spec.VolumeAttributesClassName),
		age(pvc.CreationTimestamp, now),
		volumeModeString(pvc.Spec.VolumeMode),
	}
}

func storageClassColumns() []metav1.TableColumnDefinition {
	doc := storagev1.StorageClass{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Provisioner", "string", doc["provisioner"]),
		column("ReclaimPolicy", "string", doc["reclaimPolicy"]),
		column("VolumeBindingMode", "string", doc["volumeBindingMode"]),
		column("AllowVolumeExpansion", "string", doc["allowVolumeExpansion"]),
		ageColumn(),
	}
}

func storageClassCells(sc *storagev1.StorageClass, now time.Time) []interface{} {
	name := sc.Name
	if sc.Annotations[annDefaultClass] == "true" || sc.Annotations[annBetaDefaultClass] == "true" {
		name += " (default)"
	}
	reclaim := string(corev1.PersistentVolumeReclaimDelete)
	if sc.ReclaimPolicy != nil {
		reclaim = string(*sc.ReclaimPolicy)
	}
	mode := string(storagev1.VolumeBindingImmediate)
	if sc.VolumeBindingMode != nil {
		mode = string(*sc.VolumeBindingMode)
	}
	expand := false
	if sc.AllowVolumeExpansion != nil {
		expand = *sc.AllowVolumeExpansion
	}
	return []interface{}{name, sc.Provisioner, reclaim, mode, expand, age(sc.CreationTimestamp, now)}
}

// accessModesString abbreviates access modes as kubectl does (RWO, ROX,
// RWX, RWOP), each once, in that order.
func accessModesString(modes []corev1.PersistentVolumeAccessMode) string {
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{
		{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"}, {corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"},
	} {
		for _, have := range modes {
			if have == m.mode {
				out = append(out, m.short)
				break
			}
		}
	}
	return strings.Join(out, ",")
}

func volumeModeString(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return "<unset>"
	}
	return string(*m)
}

// unsetOr returns *s, or "<unset>" when s is nil.
func unsetOr(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return *s
}

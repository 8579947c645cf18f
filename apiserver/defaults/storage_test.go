package defaults

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestStorageDefaults(t *testing.T) {
	t.Parallel()
	fs, block := corev1.PersistentVolumeFilesystem, corev1.PersistentVolumeBlock
	retain, del := corev1.PersistentVolumeReclaimRetain, corev1.PersistentVolumeReclaimDelete
	immediate, wffc := storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer
	unset := corev1.HostPathUnset
	dir := corev1.HostPathDirectoryOrCreate
	meta := metav1.ObjectMeta{Name: "x"}
	tests := []struct {
		name    string
		in, out runtime.Object
	}{
		{"pv empty",
			&corev1.PersistentVolume{ObjectMeta: meta, Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/d"}}}},
			&corev1.PersistentVolume{ObjectMeta: meta, Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: retain, VolumeMode: &fs,
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/d", Type: &unset}}},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumePending}}},
		{"pv set is kept",
			&corev1.PersistentVolume{ObjectMeta: meta, Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: del, VolumeMode: &block,
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/d", Type: &dir}}},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}},
			&corev1.PersistentVolume{ObjectMeta: meta, Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: del, VolumeMode: &block,
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/d", Type: &dir}}},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}}},
		{"pvc empty",
			&corev1.PersistentVolumeClaim{ObjectMeta: meta},
			&corev1.PersistentVolumeClaim{ObjectMeta: meta, Spec: corev1.PersistentVolumeClaimSpec{VolumeMode: &fs},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}},
		{"pvc block is kept",
			&corev1.PersistentVolumeClaim{ObjectMeta: meta, Spec: corev1.PersistentVolumeClaimSpec{VolumeMode: &block}},
			&corev1.PersistentVolumeClaim{ObjectMeta: meta, Spec: corev1.PersistentVolumeClaimSpec{VolumeMode: &block},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}},
		{"storage class empty",
			&storagev1.StorageClass{ObjectMeta: meta, Provisioner: "p"},
			&storagev1.StorageClass{ObjectMeta: meta, Provisioner: "p", ReclaimPolicy: &del, VolumeBindingMode: &immediate}},
		{"storage class set is kept",
			&storagev1.StorageClass{ObjectMeta: meta, Provisioner: "p", ReclaimPolicy: &retain, VolumeBindingMode: &wffc},
			&storagev1.StorageClass{ObjectMeta: meta, Provisioner: "p", ReclaimPolicy: &retain, VolumeBindingMode: &wffc}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			Default(tt.in)
			if !apiequality.Semantic.DeepEqual(tt.in, tt.out) {
				t.Errorf("defaulted to\n%#v\nwant\n%#v", tt.in, tt.out)
			}
		})
	}
}

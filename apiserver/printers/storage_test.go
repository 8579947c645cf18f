package printers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	pvKind  = schema.GroupKind{Kind: "PersistentVolume"}
	pvcKind = schema.GroupKind{Kind: "PersistentVolumeClaim"}
	scKind  = schema.GroupKind{Group: "storage.k8s.io", Kind: "StorageClass"}
)

func TestStorageColumns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		gk         schema.GroupKind
		want, wide string
	}{
		{pvKind,
			"NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS VOLUMEATTRIBUTESCLASS REASON AGE",
			"NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS VOLUMEATTRIBUTESCLASS REASON AGE VOLUMEMODE"},
		{pvcKind,
			"NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE",
			"NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE VOLUMEMODE"},
		{scKind,
			"NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE",
			"NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE"},
	}
	for _, tt := range tests {
		t.Run(tt.gk.Kind, func(t *testing.T) {
			t.Parallel()
			cols := For(tt.gk).Columns
			if got := headers(cols, false); got != tt.want {
				t.Errorf("columns %q, want %q", got, tt.want)
			}
			if got := headers(cols, true); got != tt.wide {
				t.Errorf("wide columns %q, want %q", got, tt.wide)
			}
		})
	}
}

func TestPersistentVolumeCells(t *testing.T) {
	t.Parallel()
	fs := corev1.PersistentVolumeFilesystem
	tests := []struct {
		name string
		pv   corev1.PersistentVolume
		want []interface{}
	}{
		{
			name: "bound",
			pv: corev1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: "pvc-1", CreationTimestamp: ago(3 * time.Minute)},
				Spec: corev1.PersistentVolumeSpec{
					Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
					AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOnce},
					PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
					ClaimRef:                      &corev1.ObjectReference{Namespace: "db", Name: "data"},
					StorageClassName:              "local-path",
					VolumeMode:                    &fs,
				},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
			},
			want: []interface{}{"pvc-1", "1Gi", "RWO,RWX", "Delete", "Bound", "db/data", "local-path", "<unset>", "", "3m", "Filesystem"},
		},
		{
			name: "terminating, beta class annotation, failed",
			pv: corev1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: "old", DeletionTimestamp: new(metav1.Now()),
					Annotations: map[string]string{corev1.BetaStorageClassAnnotation: "slow"}},
				Spec:   corev1.PersistentVolumeSpec{StorageClassName: "fast", VolumeAttributesClassName: new("gold")},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeFailed, Reason: "Recycle failed"},
			},
			want: []interface{}{"old", "0", "", "", "Terminating", "", "slow", "gold", "Recycle failed", "<unknown>", "<unset>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkRow(t, cellsFor(t, pvKind, &tt.pv), tt.want)
		})
	}
}

func TestPersistentVolumeClaimCells(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		pvc  corev1.PersistentVolumeClaim
		want []interface{}
	}{
		{
			name: "pending shows no capacity",
			pvc: corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "data", CreationTimestamp: ago(10 * time.Second)},
				Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: new("local-path"),
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
			},
			want: []interface{}{"data", "Pending", "", "", "", "local-path", "<unset>", "10s", "<unset>"},
		},
		{
			name: "bound shows the volume's capacity",
			pvc: corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "data", DeletionTimestamp: new(metav1.Now())},
				Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod},
					Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}},
			},
			want: []interface{}{"data", "Terminating", "pv-1", "5Gi", "RWOP", "", "<unset>", "<unknown>", "<unset>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkRow(t, cellsFor(t, pvcKind, &tt.pvc), tt.want)
		})
	}
}

func TestStorageClassCells(t *testing.T) {
	t.Parallel()
	retain := corev1.PersistentVolumeReclaimRetain
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	tests := []struct {
		name string
		sc   storagev1.StorageClass
		want []interface{}
	}{
		{
			name: "default class",
			sc: storagev1.StorageClass{
				ObjectMeta:        metav1.ObjectMeta{Name: "local-path", CreationTimestamp: ago(time.Hour), Annotations: map[string]string{annDefaultClass: "true"}},
				Provisioner:       "kubebus.io/local-path",
				VolumeBindingMode: &wffc,
			},
			want: []interface{}{"local-path (default)", "kubebus.io/local-path", "Delete", "WaitForFirstConsumer", false, "60m"},
		},
		{
			name: "beta default, retain, expandable",
			sc: storagev1.StorageClass{
				ObjectMeta:    metav1.ObjectMeta{Name: "fast", Annotations: map[string]string{annBetaDefaultClass: "true"}},
				Provisioner:   "example.com/fast",
				ReclaimPolicy: &retain, AllowVolumeExpansion: new(true),
			},
			want: []interface{}{"fast (default)", "example.com/fast", "Retain", "Immediate", true, "<unknown>"},
		},
		{
			name: "not default",
			sc:   storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "slow", Annotations: map[string]string{annDefaultClass: "false"}}},
			want: []interface{}{"slow", "", "Delete", "Immediate", false, "<unknown>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkRow(t, cellsFor(t, scKind, &tt.sc), tt.want)
		})
	}
}

func checkRow(t *testing.T, got, want []interface{}) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("cells %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("cell %d = %#v, want %#v (row %v)", i, got[i], want[i], got)
		}
	}
}

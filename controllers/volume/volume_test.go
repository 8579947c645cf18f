package volume

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDefaultClass(t *testing.T) {
	t.Parallel()
	at := func(name string, def bool, age time.Duration) *storagev1.StorageClass {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(1e9, 0).Add(-age))}}
		if def {
			sc.Annotations = map[string]string{AnnDefaultClass: "true"}
		}
		return sc
	}
	tests := []struct {
		name    string
		classes []*storagev1.StorageClass
		want    string
	}{
		{"none", []*storagev1.StorageClass{at("a", false, 0)}, ""},
		{"one", []*storagev1.StorageClass{at("a", false, 0), at("b", true, time.Hour)}, "b"},
		{"newest wins", []*storagev1.StorageClass{at("old", true, time.Hour), at("new", true, time.Minute)}, "new"},
		{"same age: first name", []*storagev1.StorageClass{at("z", true, time.Hour), at("m", true, time.Hour)}, "m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ""
			if sc := DefaultClass(tt.classes); sc != nil {
				got = sc.Name
			}
			if got != tt.want {
				t.Errorf("default %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPodClaimsAndBinding(t *testing.T) {
	t.Parallel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-0"}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
	}}}
	if got := PodClaims(pod); len(got) != 2 || got[0] != "data-web-0" || got[1] != "web-0-scratch" {
		t.Errorf("PodClaims = %v", got)
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "u1"}}
	for _, tt := range []struct {
		ref  *corev1.ObjectReference
		want bool
	}{
		{nil, false},
		{&corev1.ObjectReference{Namespace: "ns", Name: "c"}, true},
		{&corev1.ObjectReference{Namespace: "ns", Name: "c", UID: "u1"}, true},
		{&corev1.ObjectReference{Namespace: "ns", Name: "c", UID: "u0"}, false},
		{&corev1.ObjectReference{Namespace: "other", Name: "c"}, false},
	} {
		pv := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{ClaimRef: tt.ref}}
		if got := IsBoundTo(pv, pvc); got != tt.want {
			t.Errorf("IsBoundTo(%v) = %v, want %v", tt.ref, got, tt.want)
		}
	}
}

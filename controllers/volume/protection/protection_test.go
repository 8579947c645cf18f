package protection

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestInUse(t *testing.T) {
	t.Parallel()
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data"}}
	pod := func(mods ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
			Spec: corev1.PodSpec{NodeName: "n1", Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
		for _, m := range mods {
			m(p)
		}
		return p
	}
	tests := []struct {
		name string
		pods []*corev1.Pod
		want bool
	}{
		{"no pods", nil, false},
		{"running pod", []*corev1.Pod{pod()}, true},
		{"pod being deleted gracefully still uses it", []*corev1.Pod{pod(func(p *corev1.Pod) {
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = new(metav1.Now()), new(int64(30))
		})}, true},
		{"pod shut down by its kubelet", []*corev1.Pod{pod(func(p *corev1.Pod) {
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = new(metav1.Now()), new(int64(0))
		})}, false},
		{"finished pods", []*corev1.Pod{pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
			pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })}, false},
		{"unscheduled pod", []*corev1.Pod{pod(func(p *corev1.Pod) { p.Spec.NodeName = "" })}, false},
		{"other namespace", []*corev1.Pod{pod(func(p *corev1.Pod) { p.Namespace = "other" })}, false},
		{"other claim", []*corev1.Pod{pod(func(p *corev1.Pod) { p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "logs" })}, false},
		{"ephemeral volume's claim", []*corev1.Pod{pod(func(p *corev1.Pod) {
			p.Name = "web"
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}}
		})}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := InUse(claim, tt.pods); got != tt.want {
				t.Errorf("InUse = %v, want %v", got, tt.want)
			}
		})
	}
	eph := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-data"}}
	p := pod(func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}}
	})
	if !InUse(eph, []*corev1.Pod{p}) {
		t.Error("the ephemeral volume's claim web-data is in use")
	}
}

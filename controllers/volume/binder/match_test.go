package binder

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFindMatch(t *testing.T) {
	t.Parallel()
	fast := "fast"
	block := corev1.PersistentVolumeBlock
	tests := []struct {
		name    string
		claim   *corev1.PersistentVolumeClaim
		volumes []*corev1.PersistentVolume
		node    *corev1.Node
		want    string
	}{
		{"smallest that fits", claim(nil, "2Gi"),
			[]*corev1.PersistentVolume{pv("big", "", "10Gi"), pv("small", "", "1Gi"), pv("fit", "", "3Gi")}, nil, "fit"},
		{"equal size: first by name", claim(nil, "1Gi"),
			[]*corev1.PersistentVolume{pv("b", "", "1Gi"), pv("a", "", "1Gi")}, nil, "a"},
		{"class must match", claim(&fast, "1Gi"),
			[]*corev1.PersistentVolume{pv("slow", "slow", "1Gi"), pv("none", "", "1Gi")}, nil, ""},
		{"class-less claim takes class-less volume", claim(new(""), "1Gi"),
			[]*corev1.PersistentVolume{pv("f", "fast", "1Gi"), pv("n", "", "1Gi")}, nil, "n"},
		{"access modes", claim(nil, "1Gi", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		}), []*corev1.PersistentVolume{pv("rwo", "", "1Gi"), pv("rwx", "", "1Gi", func(v *corev1.PersistentVolume) {
			v.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadWriteMany}
		})}, nil, "rwx"},
		{"selector", claim(nil, "1Gi", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"disk": "ssd"}}
		}), []*corev1.PersistentVolume{pv("hdd", "", "1Gi"), pv("ssd", "", "5Gi", func(v *corev1.PersistentVolume) {
			v.Labels = map[string]string{"disk": "ssd"}
		})}, nil, "ssd"},
		{"volume mode", claim(nil, "1Gi", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = &block }),
			[]*corev1.PersistentVolume{pv("fs", "", "1Gi")}, nil, ""},
		{"claimed and unavailable volumes skipped", claim(nil, "1Gi"), []*corev1.PersistentVolume{
			pv("taken", "", "1Gi", claimedBy("ns", "other", "o1")),
			pv("released", "", "1Gi", func(v *corev1.PersistentVolume) { v.Status.Phase = corev1.VolumeReleased }),
			pv("deleting", "", "1Gi", func(v *corev1.PersistentVolume) { v.DeletionTimestamp = new(metav1.Now()) }),
		}, nil, ""},
		{"pre-bound wins over a better fit", claim(nil, "1Gi"), []*corev1.PersistentVolume{
			pv("fit", "", "1Gi"), pv("mine", "other-class", "50Gi", claimedBy("ns", "data", "")),
		}, nil, "mine"},
		{"pre-bound with the claim's uid", claim(nil, "1Gi"),
			[]*corev1.PersistentVolume{pv("mine", "", "1Gi", claimedBy("ns", "data", "c1"))}, nil, "mine"},
		{"pre-bound to an older claim of the name", claim(nil, "1Gi"),
			[]*corev1.PersistentVolume{pv("old", "", "1Gi", claimedBy("ns", "data", "c0"))}, nil, ""},
		{"node affinity honours the selected node", claim(nil, "1Gi"), []*corev1.PersistentVolume{
			pv("a-on-n1", "", "1Gi", onNode("n1")), pv("b-on-n2", "", "1Gi", onNode("n2")),
		}, node("n2"), "b-on-n2"},
		{"no node: affinity not checked", claim(nil, "1Gi"),
			[]*corev1.PersistentVolume{pv("on-n1", "", "1Gi", onNode("n1"))}, nil, "on-n1"},
		{"pre-bound on another node: no match", claim(nil, "1Gi"), []*corev1.PersistentVolume{
			pv("mine", "", "1Gi", onNode("n1"), claimedBy("ns", "data", "c1")), pv("free", "", "1Gi"),
		}, node("n2"), ""},
		{"invalid selector matches nothing", claim(nil, "1Gi", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bad"}}}
		}), []*corev1.PersistentVolume{pv("any", "", "1Gi")}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := names(FindMatch(tt.claim, tt.volumes, tt.node)); got != tt.want {
				t.Errorf("FindMatch = %q, want %q", got, tt.want)
			}
		})
	}
}

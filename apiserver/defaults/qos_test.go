package defaults

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

// res builds requirements from "name=quantity" pairs for requests and limits.
func res(requests, limits map[corev1.ResourceName]string) corev1.ResourceRequirements {
	list := func(m map[corev1.ResourceName]string) corev1.ResourceList {
		if m == nil {
			return nil
		}
		out := corev1.ResourceList{}
		for k, v := range m {
			out[k] = mustQuantity(v)
		}
		return out
	}
	return corev1.ResourceRequirements{Requests: list(requests), Limits: list(limits)}
}

func TestPodQOSClass(t *testing.T) {
	t.Parallel()
	full := map[corev1.ResourceName]string{"cpu": "1", "memory": "1Gi"}
	tests := []struct {
		name     string
		init     []corev1.ResourceRequirements
		regular  []corev1.ResourceRequirements
		podLevel *corev1.ResourceRequirements
		want     corev1.PodQOSClass
	}{
		{
			name:    "nothing set",
			regular: []corev1.ResourceRequirements{{}, {}},
			want:    corev1.PodQOSBestEffort,
		},
		{
			name:    "only other resources",
			regular: []corev1.ResourceRequirements{res(map[corev1.ResourceName]string{"ephemeral-storage": "1Gi"}, nil)},
			want:    corev1.PodQOSBestEffort,
		},
		{
			name:    "zero quantities do not count",
			regular: []corev1.ResourceRequirements{res(map[corev1.ResourceName]string{"cpu": "0"}, nil)},
			want:    corev1.PodQOSBestEffort,
		},
		{
			name:    "requests equal limits",
			regular: []corev1.ResourceRequirements{res(full, full), res(full, full)},
			want:    corev1.PodQOSGuaranteed,
		},
		{
			name:    "limits only (requests defaulted from limits would be equal)",
			regular: []corev1.ResourceRequirements{res(nil, full)},
			want:    corev1.PodQOSBurstable,
		},
		{
			name:    "request below limit",
			regular: []corev1.ResourceRequirements{res(map[corev1.ResourceName]string{"cpu": "500m", "memory": "1Gi"}, full)},
			want:    corev1.PodQOSBurstable,
		},
		{
			name:    "memory limit missing",
			regular: []corev1.ResourceRequirements{res(map[corev1.ResourceName]string{"cpu": "1"}, map[corev1.ResourceName]string{"cpu": "1"})},
			want:    corev1.PodQOSBurstable,
		},
		{
			name:    "one container without limits",
			regular: []corev1.ResourceRequirements{res(full, full), {}},
			want:    corev1.PodQOSBurstable,
		},
		{
			name:    "init container counts",
			init:    []corev1.ResourceRequirements{res(map[corev1.ResourceName]string{"cpu": "1"}, nil)},
			regular: []corev1.ResourceRequirements{res(full, full)},
			want:    corev1.PodQOSBurstable,
		},
		{
			name:     "pod-level resources decide",
			regular:  []corev1.ResourceRequirements{{}},
			podLevel: &corev1.ResourceRequirements{Requests: res(full, nil).Requests, Limits: res(full, nil).Requests},
			want:     corev1.PodQOSGuaranteed,
		},
		{
			name:     "pod-level requests only",
			regular:  []corev1.ResourceRequirements{res(full, full)},
			podLevel: &corev1.ResourceRequirements{Requests: res(full, nil).Requests},
			want:     corev1.PodQOSBurstable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pod := &corev1.Pod{Spec: corev1.PodSpec{Resources: tt.podLevel}}
			for _, r := range tt.init {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Resources: r})
			}
			for _, r := range tt.regular {
				pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Resources: r})
			}
			if got := PodQOSClass(pod); got != tt.want {
				t.Fatalf("PodQOSClass = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestPodQOSClassAfterDefault(t *testing.T) {
	t.Parallel()
	pod := minimalPod()
	pod.Spec.Containers[0].Resources = res(nil, map[corev1.ResourceName]string{"cpu": "1", "memory": "1Gi"})
	Default(pod)
	if got := PodQOSClass(pod); got != corev1.PodQOSGuaranteed {
		t.Fatalf("a pod with only limits is %s after defaulting, want Guaranteed", got)
	}
}

package pods

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// QOSClass computes the pod's quality-of-service class from the cpu and
// memory requests and limits of its containers, as upstream: BestEffort
// without any, Guaranteed when every container limits both and requests
// equal limits, else Burstable. A
// missing request counts as equal to the limit, as API defaulting sets it.
func QOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	sum := func(into corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
		if cur, ok := into[name]; ok {
			q.Add(cur)
		}
		into[name] = q
	}
	all := append(append([]corev1.Container{}, pod.Spec.Containers...), pod.Spec.InitContainers...)
	for _, c := range all {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			q, ok := c.Resources.Requests[name]
			if !ok {
				q, ok = c.Resources.Limits[name] // as API defaulting does
			}
			if ok && q.Sign() > 0 {
				sum(requests, name, q.DeepCopy())
			}
		}
		found := 0
		for name, q := range c.Resources.Limits {
			if (name == corev1.ResourceCPU || name == corev1.ResourceMemory) && q.Sign() > 0 {
				found++
				sum(limits, name, q.DeepCopy())
			}
		}
		if found < 2 {
			guaranteed = false
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

package defaults

import corev1 "k8s.io/api/core/v1"

// PodQOSClass computes the QoS class (Guaranteed, Burstable, BestEffort) of a
// pod from its requests and limits, as upstream.
//
// Only cpu and memory count, and only positive quantities. A pod with none
// is BestEffort. It is Guaranteed when every container (regular and init)
// has both a cpu and a memory limit and the pod's summed requests equal its
// summed limits for both. Anything else is Burstable. When the pod sets
// pod-level resources, those decide instead of the containers'.
//
// It reads spec only, not status.qosClass; run it after Default, which
// copies limits into missing requests.
func PodQOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	requests := corev1.ResourceList{}
	limits := corev1.ResourceList{}
	guaranteed := true

	if r := pod.Spec.Resources; r != nil && len(r.Requests)+len(r.Limits) > 0 {
		addQOSQuantities(requests, r.Requests)
		guaranteed = addQOSQuantities(limits, r.Limits)
	} else {
		for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for i := range list {
				addQOSQuantities(requests, list[i].Resources.Requests)
				if !addQOSQuantities(limits, list[i].Resources.Limits) {
					guaranteed = false
				}
			}
		}
	}

	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if !guaranteed || len(requests) != len(limits) {
		return corev1.PodQOSBurstable
	}
	for name, req := range requests {
		if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
			return corev1.PodQOSBurstable
		}
	}
	return corev1.PodQOSGuaranteed
}

// addQOSQuantities adds the positive cpu and memory quantities of from into
// sum. It reports whether from had both.
func addQOSQuantities(sum, from corev1.ResourceList) (both bool) {
	found := 0
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		q, ok := from[name]
		if !ok || q.Sign() <= 0 {
			continue
		}
		found++
		total := sum[name] // the zero Quantity when absent
		total.Add(q)
		sum[name] = total
	}
	return found == 2
}

// Package endpointutil holds what the Endpoints and EndpointSlice
// controllers share: which Services select a pod, and whether a pod change
// can change their endpoints.
package endpointutil

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ServiceLister lists a namespace's Services (the shared informer does).
type ServiceLister interface {
	ListNamespace(namespace string) []*corev1.Service
}

// Selects reports whether a Service's endpoints come from a pod selector.
func Selects(svc *corev1.Service) bool {
	return len(svc.Spec.Selector) > 0 && svc.Spec.Type != corev1.ServiceTypeExternalName
}

// ServicesFor returns the services whose selector matches the pod.
func ServicesFor(services ServiceLister, pod *corev1.Pod) []*corev1.Service {
	var out []*corev1.Service
	for _, svc := range services.ListNamespace(pod.Namespace) {
		if Selects(svc) && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			out = append(out, svc)
		}
	}
	return out
}

// PodReady reports the pod's Ready condition.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PodChanged reports whether an update of a pod can change any endpoints.
func PodChanged(old, pod *corev1.Pod) bool {
	return !maps.Equal(old.Labels, pod.Labels) ||
		old.Status.PodIP != pod.Status.PodIP ||
		!slices.Equal(old.Status.PodIPs, pod.Status.PodIPs) ||
		PodReady(old) != PodReady(pod) ||
		old.Status.Phase != pod.Status.Phase ||
		(old.DeletionTimestamp == nil) != (pod.DeletionTimestamp == nil) ||
		old.Spec.NodeName != pod.Spec.NodeName ||
		old.Spec.Hostname != pod.Spec.Hostname || old.Spec.Subdomain != pod.Spec.Subdomain
}

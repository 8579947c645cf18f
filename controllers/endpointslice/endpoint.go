package endpointslice

import (
	"cmp"
	"fmt"
	"github.com/kubebus/kubebus/controllers/endpointutil"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// addressTypes are the slices' address types for svc, primary first.
func addressTypes(svc *corev1.Service) []discoveryv1.AddressType {
	var out []discoveryv1.AddressType
	for _, f := range svc.Spec.IPFamilies {
		switch f {
		case corev1.IPv4Protocol:
			out = append(out, discoveryv1.AddressTypeIPv4)
		case corev1.IPv6Protocol:
			out = append(out, discoveryv1.AddressTypeIPv6)
		}
	}
	if len(out) > 0 {
		return out
	}
	if ip, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil && ip.Is6() {
		return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv6}
	}
	return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4}
}

// inSlices reports whether a pod is listed: it has an IP and has not
// finished. Terminating pods are listed with their conditions.
func inSlices(pod *corev1.Pod) bool {
	if pod.Status.PodIP == "" && len(pod.Status.PodIPs) == 0 {
		return false
	}
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// podAddress returns the pod's first IP of the address type.
func podAddress(pod *corev1.Pod, at discoveryv1.AddressType) string {
	ips := make([]string, 0, len(pod.Status.PodIPs)+1)
	for _, p := range pod.Status.PodIPs {
		ips = append(ips, p.IP)
	}
	if len(ips) == 0 {
		ips = append(ips, pod.Status.PodIP)
	}
	for _, s := range ips {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		if (at == discoveryv1.AddressTypeIPv4 && ip.Is4()) || (at == discoveryv1.AddressTypeIPv6 && ip.Is6()) {
			return s
		}
	}
	return ""
}

// podEndpoint is the endpoint of a pod in a slice of the address type, or
// false when the pod has no address of that type.
func podEndpoint(svc *corev1.Service, pod *corev1.Pod, at discoveryv1.AddressType, zone string) (discoveryv1.Endpoint, bool) {
	ip := podAddress(pod, at)
	if ip == "" {
		return discoveryv1.Endpoint{}, false
	}
	serving := svc.Spec.PublishNotReadyAddresses || endpointutil.PodReady(pod)
	terminating := pod.DeletionTimestamp != nil
	// A terminating pod is never ready, unless the service publishes
	// unready addresses.
	ready := serving && (!terminating || svc.Spec.PublishNotReadyAddresses)
	ep := discoveryv1.Endpoint{
		Addresses:  []string{ip},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if pod.Spec.NodeName != "" {
		ep.NodeName = &pod.Spec.NodeName
	}
	if zone != "" {
		ep.Zone = &zone
	}
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace {
		ep.Hostname = &pod.Spec.Hostname
	}
	return ep, true
}

// podPorts resolves the service's ports for a pod; ports a pod cannot
// resolve (a missing named port) are left out. The result is sorted.
func podPorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	out := make([]discoveryv1.EndpointPort, 0, len(svc.Spec.Ports))
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		port, ok := findPort(pod, sp)
		if !ok {
			continue
		}
		name, proto := sp.Name, cmp.Or(sp.Protocol, corev1.ProtocolTCP)
		out = append(out, discoveryv1.EndpointPort{Name: &name, Port: &port, Protocol: &proto, AppProtocol: sp.AppProtocol})
	}
	sortPorts(out)
	return out
}

// findPort resolves a service port's targetPort against the pod: a number
// is used as is; a name is looked up among the ports of the pod's
// containers and sidecar (restartable init) containers with the same
// protocol.
func findPort(pod *corev1.Pod, sp *corev1.ServicePort) (int32, bool) {
	tp := sp.TargetPort
	if tp.Type == intstr.String && tp.StrVal != "" {
		proto := cmp.Or(sp.Protocol, corev1.ProtocolTCP)
		for _, c := range pod.Spec.Containers {
			if p, ok := namedPort(c, tp.StrVal, proto); ok {
				return p, true
			}
		}
		for _, c := range pod.Spec.InitContainers {
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				if p, ok := namedPort(c, tp.StrVal, proto); ok {
					return p, true
				}
			}
		}
		return 0, false
	}
	if tp.Type == intstr.Int && tp.IntVal != 0 {
		return tp.IntVal, true
	}
	return sp.Port, true
}

func namedPort(c corev1.Container, name string, proto corev1.Protocol) (int32, bool) {
	for _, p := range c.Ports {
		if p.Name == name && cmp.Or(p.Protocol, corev1.ProtocolTCP) == proto {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

func sortPorts(ports []discoveryv1.EndpointPort) {
	slices.SortFunc(ports, func(a, b discoveryv1.EndpointPort) int {
		return cmp.Or(strings.Compare(deref(a.Name), deref(b.Name)), cmp.Compare(deref(a.Port), deref(b.Port)),
			strings.Compare(string(deref(a.Protocol)), string(deref(b.Protocol))))
	})
}

// portsKey identifies a set of ports (sorted first).
func portsKey(ports []discoveryv1.EndpointPort) string {
	ports = slices.Clone(ports)
	sortPorts(ports)
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "%s/%d/%s/%s;", deref(p.Name), deref(p.Port), deref(p.Protocol), deref(p.AppProtocol))
	}
	return b.String()
}

// endpointID identifies an endpoint across syncs: its pod, or its first
// address when it names none.
func endpointID(ep *discoveryv1.Endpoint) string {
	if ep.TargetRef != nil && ep.TargetRef.UID != "" {
		return "uid:" + string(ep.TargetRef.UID)
	}
	if len(ep.Addresses) > 0 {
		return "addr:" + ep.Addresses[0]
	}
	return ""
}

func sortEndpoints(eps []discoveryv1.Endpoint) {
	slices.SortFunc(eps, func(a, b discoveryv1.Endpoint) int {
		var aa, ba string
		if len(a.Addresses) > 0 {
			aa = a.Addresses[0]
		}
		if len(b.Addresses) > 0 {
			ba = b.Addresses[0]
		}
		pa, ea := netip.ParseAddr(aa)
		pb, eb := netip.ParseAddr(ba)
		if ea == nil && eb == nil {
			if c := pa.Compare(pb); c != 0 {
				return c
			}
		} else if c := strings.Compare(aa, ba); c != 0 {
			return c
		}
		return strings.Compare(endpointID(&a), endpointID(&b))
	})
}

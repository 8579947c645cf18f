package endpoints

import (
	"cmp"
	"fmt"
	"github.com/kubebus/kubebus/controllers/endpointutil"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Labels and annotations the controller sets on Endpoints.
const (
	// LabelManagedBy marks Endpoints this controller owns.
	LabelManagedBy = "endpoints.kubernetes.io/managed-by"
	// ManagedByValue is LabelManagedBy's value.
	ManagedByValue = "endpoint-controller"
	// LabelHeadless marks the Endpoints of a service without a cluster IP.
	LabelHeadless = corev1.IsHeadlessService
	// AnnotationOverCapacity says addresses were left out.
	AnnotationOverCapacity = corev1.EndpointsOverCapacity
	// MaxAddresses is how many addresses an Endpoints lists at most.
	MaxAddresses = 1000
)

// desiredLabels are the service's labels plus the controller's.
func desiredLabels(svc *corev1.Service) map[string]string {
	out := make(map[string]string, len(svc.Labels)+2)
	for k, v := range svc.Labels {
		out[k] = v
	}
	delete(out, LabelHeadless)
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		out[LabelHeadless] = ""
	}
	out[LabelManagedBy] = ManagedByValue
	return out
}

// address is one pod's entry: where it goes and under which ports.
type address struct {
	addr  corev1.EndpointAddress
	ready bool
	ports []corev1.EndpointPort
}

// desiredSubsets computes the subsets of svc's Endpoints from the pods in
// its namespace that match its selector (the caller selects them). Pods
// with the same resolved ports share a subset; everything is sorted, so
// equal inputs give equal outputs. truncated reports that addresses beyond
// MaxAddresses were left out (ready ones are kept first).
func desiredSubsets(svc *corev1.Service, pods []*corev1.Pod) (subsets []corev1.EndpointSubset, truncated bool) {
	tolerateUnready := svc.Spec.PublishNotReadyAddresses
	family := serviceFamily(svc)
	var addrs []address
	for _, pod := range pods {
		if pod.Namespace != svc.Namespace || !inEndpoints(pod, tolerateUnready) {
			continue
		}
		ip := podIP(pod, family)
		if ip == "" {
			continue
		}
		a := address{addr: endpointAddress(svc, pod, ip), ready: tolerateUnready || endpointutil.PodReady(pod)}
		if len(svc.Spec.Ports) == 0 {
			if svc.Spec.ClusterIP != corev1.ClusterIPNone {
				continue // a service with a cluster IP and no ports has no endpoints
			}
		} else {
			for i := range svc.Spec.Ports {
				sp := &svc.Spec.Ports[i]
				port, ok := findPort(pod, sp)
				if !ok {
					continue
				}
				a.ports = append(a.ports, corev1.EndpointPort{Name: sp.Name, Port: port, Protocol: sp.Protocol, AppProtocol: sp.AppProtocol})
			}
			if len(a.ports) == 0 {
				continue
			}
		}
		sortPorts(a.ports)
		addrs = append(addrs, a)
	}
	addrs, truncated = truncate(addrs, MaxAddresses)
	return pack(addrs), truncated
}

// truncate keeps at most limit addresses, ready ones first.
func truncate(addrs []address, limit int) ([]address, bool) {
	if len(addrs) <= limit {
		return addrs, false
	}
	slices.SortStableFunc(addrs, func(a, b address) int {
		switch {
		case a.ready == b.ready:
			return compareAddress(a.addr, b.addr)
		case a.ready:
			return -1
		default:
			return 1
		}
	})
	return addrs[:limit], true
}

// pack groups addresses by their port sets into sorted subsets.
func pack(addrs []address) []corev1.EndpointSubset {
	byPorts := map[string]*corev1.EndpointSubset{}
	var keys []string
	for _, a := range addrs {
		k := portsKey(a.ports)
		ss, ok := byPorts[k]
		if !ok {
			ss = &corev1.EndpointSubset{Ports: a.ports}
			byPorts[k] = ss
			keys = append(keys, k)
		}
		if a.ready {
			ss.Addresses = append(ss.Addresses, a.addr)
		} else {
			ss.NotReadyAddresses = append(ss.NotReadyAddresses, a.addr)
		}
	}
	slices.Sort(keys)
	out := make([]corev1.EndpointSubset, 0, len(keys))
	for _, k := range keys {
		ss := byPorts[k]
		slices.SortFunc(ss.Addresses, compareAddress)
		slices.SortFunc(ss.NotReadyAddresses, compareAddress)
		out = append(out, *ss)
	}
	return out
}

func compareAddress(a, b corev1.EndpointAddress) int {
	if c := compareIP(a.IP, b.IP); c != 0 {
		return c
	}
	var au, bu string
	if a.TargetRef != nil {
		au = string(a.TargetRef.UID)
	}
	if b.TargetRef != nil {
		bu = string(b.TargetRef.UID)
	}
	return strings.Compare(au, bu)
}

func compareIP(a, b string) int {
	pa, ea := netip.ParseAddr(a)
	pb, eb := netip.ParseAddr(b)
	if ea != nil || eb != nil {
		return strings.Compare(a, b)
	}
	return pa.Compare(pb)
}

func sortPorts(ports []corev1.EndpointPort) {
	slices.SortFunc(ports, func(a, b corev1.EndpointPort) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.Port, b.Port), strings.Compare(string(a.Protocol), string(b.Protocol)))
	})
}

func portsKey(ports []corev1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		app := ""
		if p.AppProtocol != nil {
			app = *p.AppProtocol
		}
		fmt.Fprintf(&b, "%s/%d/%s/%s;", p.Name, p.Port, p.Protocol, app)
	}
	return b.String()
}

func endpointAddress(svc *corev1.Service, pod *corev1.Pod, ip string) corev1.EndpointAddress {
	a := corev1.EndpointAddress{IP: ip, TargetRef: &corev1.ObjectReference{
		Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
	}}
	if pod.Spec.NodeName != "" {
		a.NodeName = &pod.Spec.NodeName
	}
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace {
		a.Hostname = pod.Spec.Hostname
	}
	return a
}

// inEndpoints reports whether a pod is listed at all: it has an IP, has not
// finished, and is not terminating unless the service publishes unready
// addresses.
func inEndpoints(pod *corev1.Pod, includeTerminating bool) bool {
	switch {
	case pod.Status.PodIP == "" && len(pod.Status.PodIPs) == 0:
		return false
	case !includeTerminating && pod.DeletionTimestamp != nil:
		return false
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return false
	}
	return true
}

// serviceFamily is the service's primary IP family, or "" when unknown.
func serviceFamily(svc *corev1.Service) corev1.IPFamily {
	if len(svc.Spec.IPFamilies) > 0 {
		return svc.Spec.IPFamilies[0]
	}
	if ip, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil {
		if ip.Is4() {
			return corev1.IPv4Protocol
		}
		return corev1.IPv6Protocol
	}
	return ""
}

// podIP returns the pod's first IP of the family (any family when "").
func podIP(pod *corev1.Pod, family corev1.IPFamily) string {
	ips := make([]string, 0, len(pod.Status.PodIPs)+1)
	for _, p := range pod.Status.PodIPs {
		ips = append(ips, p.IP)
	}
	if len(ips) == 0 && pod.Status.PodIP != "" {
		ips = append(ips, pod.Status.PodIP)
	}
	for _, s := range ips {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		switch {
		case family == "",
			family == corev1.IPv4Protocol && ip.Is4(),
			family == corev1.IPv6Protocol && ip.Is6():
			return s
		}
	}
	return ""
}

// findPort resolves a service port's targetPort against the pod: a number
// is used as is; a name is looked up among the ports of the pod's
// containers and sidecar (restartable init) containers with the same
// protocol.
func findPort(pod *corev1.Pod, sp *corev1.ServicePort) (int32, bool) {
	tp := sp.TargetPort
	if tp.Type == intstr.String && tp.StrVal != "" {
		containers := slices.Concat(pod.Spec.Containers, sidecars(pod))
		for _, c := range containers {
			for _, p := range c.Ports {
				proto := cmp.Or(p.Protocol, corev1.ProtocolTCP)
				if p.Name == tp.StrVal && proto == cmp.Or(sp.Protocol, corev1.ProtocolTCP) {
					return p.ContainerPort, true
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

func sidecars(pod *corev1.Pod) []corev1.Container {
	var out []corev1.Container
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	return out
}

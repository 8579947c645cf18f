package printers

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Printers for Services and the endpoints behind them.

// listLimit is how many endpoints or ports a cell lists before "+ N more...".
const listLimit = 3

func serviceColumns() []metav1.TableColumnDefinition {
	doc := corev1.ServiceSpec{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Type", "string", doc["type"]),
		column("Cluster-IP", "string", doc["clusterIP"]),
		column("External-IP", "string", doc["externalIPs"]),
		column("Port(s)", "string", doc["ports"]),
		ageColumn(),
		wideColumn("Selector", "string", doc["selector"]),
	}
}

func serviceCells(svc *corev1.Service, now time.Time) []interface{} {
	clusterIP := svc.Spec.ClusterIP
	if len(svc.Spec.ClusterIPs) > 0 {
		clusterIP = svc.Spec.ClusterIPs[0]
	}
	return []interface{}{
		svc.Name,
		string(svc.Spec.Type),
		orNone(clusterIP),
		serviceExternalIP(svc),
		orNone(servicePorts(svc.Spec.Ports)),
		age(svc.CreationTimestamp, now),
		labels.FormatLabels(svc.Spec.Selector),
	}
}

// serviceExternalIP is the EXTERNAL-IP cell: the external IPs, for a load
// balancer also its ingress addresses ("<pending>" until it has one), for
// an ExternalName service the name.
func serviceExternalIP(svc *corev1.Service) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		return orNone(strings.Join(svc.Spec.ExternalIPs, ","))
	case corev1.ServiceTypeLoadBalancer:
		var ips []string
		seen := map[string]bool{}
		for _, in := range svc.Status.LoadBalancer.Ingress {
			addr := in.IP
			if addr == "" {
				addr = in.Hostname
			}
			if addr != "" && !seen[addr] {
				seen[addr] = true
				ips = append(ips, addr)
			}
		}
		ips = append(ips, svc.Spec.ExternalIPs...)
		if len(ips) == 0 {
			return "<pending>"
		}
		return strings.Join(ips, ",")
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return "<unknown>"
}

// servicePorts is the PORT(S) cell: "80/TCP", or "80:30080/TCP" with a
// node port, comma-separated.
func servicePorts(ports []corev1.ServicePort) string {
	parts := make([]string, 0, len(ports))
	for _, p := range ports {
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		if p.NodePort > 0 {
			parts = append(parts, fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, proto))
		} else {
			parts = append(parts, fmt.Sprintf("%d/%s", p.Port, proto))
		}
	}
	return strings.Join(parts, ",")
}

func endpointsColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Endpoints", "string", corev1.Endpoints{}.SwaggerDoc()["subsets"]),
		ageColumn(),
	}
}

func endpointsCells(ep *corev1.Endpoints, now time.Time) []interface{} {
	return []interface{}{ep.Name, endpointsList(ep.Subsets), age(ep.CreationTimestamp, now)}
}

// endpointsList lists the first few ip:port pairs (bare IPs for a subset
// without ports) and how many more there are; "<none>" without subsets.
func endpointsList(subsets []corev1.EndpointSubset) string {
	if len(subsets) == 0 {
		return "<none>"
	}
	var l limitedList
	for _, ss := range subsets {
		if len(ss.Ports) == 0 {
			for _, a := range ss.Addresses {
				l.add(a.IP)
			}
			continue
		}
		for _, p := range ss.Ports {
			for _, a := range ss.Addresses {
				l.add(net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	return l.String()
}

func endpointSliceColumns() []metav1.TableColumnDefinition {
	doc := discoveryv1.EndpointSlice{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("AddressType", "string", doc["addressType"]),
		column("Ports", "string", doc["ports"]),
		column("Endpoints", "string", doc["endpoints"]),
		ageColumn(),
	}
}

func endpointSliceCells(es *discoveryv1.EndpointSlice, now time.Time) []interface{} {
	var ports, addrs limitedList
	for _, p := range es.Ports {
		switch {
		case p.Port != nil:
			ports.add(strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			ports.add(*p.Name)
		default:
			ports.add("*")
		}
	}
	for _, e := range es.Endpoints {
		for _, a := range e.Addresses {
			addrs.add(a)
		}
	}
	return []interface{}{
		es.Name,
		string(es.AddressType),
		ports.orUnset(),
		addrs.orUnset(),
		age(es.CreationTimestamp, now),
	}
}

// limitedList keeps the first listLimit items and counts the rest.
type limitedList struct {
	items []string
	total int
}

func (l *limitedList) add(s string) {
	if len(l.items) < listLimit {
		l.items = append(l.items, s)
	}
	l.total++
}

// String joins the kept items and appends " + N more..." for the rest.
func (l *limitedList) String() string {
	s := strings.Join(l.items, ",")
	if l.total > len(l.items) {
		s += fmt.Sprintf(" + %d more...", l.total-len(l.items))
	}
	return s
}

// orUnset is String, or "<unset>" for an empty list.
func (l *limitedList) orUnset() string {
	if l.total == 0 {
		return "<unset>"
	}
	return l.String()
}

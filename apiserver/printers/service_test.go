package printers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestServiceCells(t *testing.T) {
	t.Parallel()
	tcp80 := corev1.ServicePort{Port: 80, Protocol: corev1.ProtocolTCP}
	tests := []struct {
		name string
		spec corev1.ServiceSpec
		lb   []corev1.LoadBalancerIngress
		want map[string]interface{}
	}{
		{
			name: "cluster IP",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"},
				Ports: []corev1.ServicePort{tcp80, {Port: 53, Protocol: corev1.ProtocolUDP}}, Selector: map[string]string{"app": "web", "tier": "front"}},
			want: map[string]interface{}{"TYPE": "ClusterIP", "CLUSTER-IP": "10.96.0.10", "EXTERNAL-IP": "<none>",
				"PORT(S)": "80/TCP,53/UDP", "SELECTOR": "app=web,tier=front"},
		},
		{
			name: "dual stack shows the first cluster IP",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.11", ClusterIPs: []string{"10.96.0.11", "fd00::11"}, Ports: []corev1.ServicePort{tcp80}},
			want: map[string]interface{}{"CLUSTER-IP": "10.96.0.11"},
		},
		{
			name: "only the legacy cluster IP",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.12"},
			want: map[string]interface{}{"CLUSTER-IP": "10.96.0.12", "PORT(S)": "<none>", "SELECTOR": "<none>"},
		},
		{
			name: "headless",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "None", ClusterIPs: []string{"None"}, Ports: []corev1.ServicePort{tcp80}},
			want: map[string]interface{}{"CLUSTER-IP": "None"},
		},
		{
			name: "cluster IP with external IPs",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{"10.96.0.13"}, ExternalIPs: []string{"198.51.100.1", "198.51.100.2"}},
			want: map[string]interface{}{"EXTERNAL-IP": "198.51.100.1,198.51.100.2"},
		},
		{
			name: "node port",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIPs: []string{"10.96.0.14"},
				Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}, {Port: 443, NodePort: 30443, Protocol: corev1.ProtocolTCP}}},
			want: map[string]interface{}{"TYPE": "NodePort", "EXTERNAL-IP": "<none>", "PORT(S)": "80:30080/TCP,443:30443/TCP"},
		},
		{
			name: "unset protocol reads as TCP",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 8080, NodePort: 31000}}},
			want: map[string]interface{}{"PORT(S)": "8080:31000/TCP"},
		},
		{
			name: "load balancer pending",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.96.0.15"},
				Ports: []corev1.ServicePort{{Port: 80, NodePort: 31080, Protocol: corev1.ProtocolTCP}}},
			want: map[string]interface{}{"TYPE": "LoadBalancer", "EXTERNAL-IP": "<pending>", "PORT(S)": "80:31080/TCP"},
		},
		{
			name: "load balancer with ingress and external IPs",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalIPs: []string{"198.51.100.7"}},
			lb:   []corev1.LoadBalancerIngress{{IP: "203.0.113.5"}, {Hostname: "lb.example.com"}, {IP: "203.0.113.5"}},
			want: map[string]interface{}{"EXTERNAL-IP": "203.0.113.5,lb.example.com,198.51.100.7"},
		},
		{
			name: "external name",
			spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"},
			want: map[string]interface{}{"TYPE": "ExternalName", "CLUSTER-IP": "<none>", "EXTERNAL-IP": "db.example.com", "PORT(S)": "<none>"},
		},
		{
			name: "no type",
			spec: corev1.ServiceSpec{},
			want: map[string]interface{}{"TYPE": "", "EXTERNAL-IP": "<unknown>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svc := &corev1.Service{Spec: tt.spec}
			svc.Name = "web"
			svc.Status.LoadBalancer.Ingress = tt.lb
			want := map[string]interface{}{"NAME": "web"}
			for k, v := range tt.want {
				want[k] = v
			}
			checkCells(t, schema.GroupKind{Kind: "Service"}, svc, want)
		})
	}
}

func addresses(ips ...string) []corev1.EndpointAddress {
	as := make([]corev1.EndpointAddress, len(ips))
	for i, ip := range ips {
		as[i] = corev1.EndpointAddress{IP: ip}
	}
	return as
}

func TestEndpointsCells(t *testing.T) {
	t.Parallel()
	port80 := []corev1.EndpointPort{{Name: "http", Port: 80}}
	tests := []struct {
		name    string
		subsets []corev1.EndpointSubset
		want    string
	}{
		{"no subsets", nil, "<none>"},
		{"two endpoints", []corev1.EndpointSubset{{Addresses: addresses("10.0.0.1", "10.0.0.2"), Ports: port80}},
			"10.0.0.1:80,10.0.0.2:80"},
		{"exactly three", []corev1.EndpointSubset{{Addresses: addresses("10.0.0.1", "10.0.0.2", "10.0.0.3"), Ports: port80}},
			"10.0.0.1:80,10.0.0.2:80,10.0.0.3:80"},
		{"four truncated", []corev1.EndpointSubset{{Addresses: addresses("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"), Ports: port80}},
			"10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 1 more..."},
		{"every port of every address counts", []corev1.EndpointSubset{
			{Addresses: addresses("10.0.0.1", "10.0.0.2"), Ports: []corev1.EndpointPort{{Name: "http", Port: 80}, {Name: "https", Port: 443}}},
			{Addresses: addresses("10.0.1.1"), Ports: port80},
		}, "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 2 more..."},
		{"headless without ports", []corev1.EndpointSubset{{Addresses: addresses("10.0.0.1", "10.0.0.2")}},
			"10.0.0.1,10.0.0.2"},
		{"IPv6", []corev1.EndpointSubset{{Addresses: addresses("fd00::1"), Ports: port80}}, "[fd00::1]:80"},
		{"only not-ready addresses", []corev1.EndpointSubset{{NotReadyAddresses: addresses("10.0.0.1"), Ports: port80}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ep := &corev1.Endpoints{Subsets: tt.subsets}
			checkCells(t, schema.GroupKind{Kind: "Endpoints"}, ep, map[string]interface{}{"ENDPOINTS": tt.want})
		})
	}
}

func TestEndpointSliceCells(t *testing.T) {
	t.Parallel()
	i32 := func(v int32) *int32 { return &v }
	str := func(v string) *string { return &v }
	tests := []struct {
		name  string
		slice discoveryv1.EndpointSlice
		want  map[string]interface{}
	}{
		{
			name: "ports and endpoints",
			slice: discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4,
				Ports:     []discoveryv1.EndpointPort{{Port: i32(80)}, {Port: i32(443)}},
				Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}, {Addresses: []string{"10.0.0.2"}}}},
			want: map[string]interface{}{"ADDRESSTYPE": "IPv4", "PORTS": "80,443", "ENDPOINTS": "10.0.0.1,10.0.0.2"},
		},
		{
			name:  "empty",
			slice: discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv6},
			want:  map[string]interface{}{"ADDRESSTYPE": "IPv6", "PORTS": "<unset>", "ENDPOINTS": "<unset>"},
		},
		{
			name: "named and wildcard ports, truncated",
			slice: discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeFQDN,
				Ports: []discoveryv1.EndpointPort{{Name: str("http")}, {}, {Port: i32(8080), Name: str("alt")}, {Port: i32(9090)}, {Port: i32(9091)}}},
			want: map[string]interface{}{"PORTS": "http,*,8080 + 2 more...", "ENDPOINTS": "<unset>"},
		},
		{
			name: "endpoints truncated across endpoints",
			slice: discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"10.0.0.1", "10.0.0.2"}}, {Addresses: []string{"10.0.0.3"}}, {Addresses: []string{"10.0.0.4"}}}},
			want: map[string]interface{}{"ENDPOINTS": "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more..."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkCells(t, schema.GroupKind{Group: "discovery.k8s.io", Kind: "EndpointSlice"}, &tt.slice, tt.want)
		})
	}
}

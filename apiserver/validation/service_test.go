package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// validService is a defaulted ClusterIP service with its IP allocated.
func validService() *corev1.Service {
	return defaulted(&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "9"},
		Spec: corev1.ServiceSpec{
			Selector:   map[string]string{"app": "web"},
			Ports:      []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}, {Name: "https", Port: 443}},
			ClusterIP:  "10.96.0.10",
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
		},
	})
}

func TestValidateService(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*corev1.Service)
		wants  []want
	}{
		{"valid", func(*corev1.Service) {}, nil},
		{"ports required", func(s *corev1.Service) { s.Spec.Ports = nil }, []want{required("spec.ports")}},
		{"headless needs no ports", func(s *corev1.Service) {
			s.Spec.Ports = nil
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "None", []string{"None"}
		}, nil},
		{"port range", func(s *corev1.Service) { s.Spec.Ports[1].Port = 0 }, []want{invalid("spec.ports[1].port")}},
		{"port names required with several ports", func(s *corev1.Service) { s.Spec.Ports[1].Name = "" }, []want{required("spec.ports[1].name")}},
		{"single port needs no name", func(s *corev1.Service) {
			s.Spec.Ports = s.Spec.Ports[1:]
			s.Spec.Ports[0].Name = ""
		}, nil},
		{"port names are unique", func(s *corev1.Service) { s.Spec.Ports[1].Name = "http" }, []want{duplicate("spec.ports[1].name")}},
		{"port numbers are unique per protocol", func(s *corev1.Service) { s.Spec.Ports[1].Port = 80 }, []want{duplicate("spec.ports[1]")}},
		{"same port on another protocol", func(s *corev1.Service) {
			s.Spec.Ports[1].Port = 80
			s.Spec.Ports[1].Protocol = corev1.ProtocolUDP
		}, nil},
		{"protocol", func(s *corev1.Service) { s.Spec.Ports[0].Protocol = "HTTP" }, []want{notSupported("spec.ports[0].protocol")}},
		{"target port", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("Not A Name") }, []want{invalid("spec.ports[0].targetPort")}},
		{"type", func(s *corev1.Service) { s.Spec.Type = "Internal" }, []want{notSupported("spec.type")}},
		{"node port not on cluster IP", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30080 }, []want{forbidden("spec.ports[0].nodePort")}},
		{"node port service", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			s.Spec.Ports[0].NodePort = 30080
		}, nil},
		{"node ports are unique", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
			s.Spec.Ports[0].NodePort = 30080
			s.Spec.Ports[1].NodePort = 30080
		}, []want{duplicate("spec.ports[1].nodePort")}},
		{"external traffic policy needs external access", func(s *corev1.Service) {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		}, []want{invalid("spec.externalTrafficPolicy")}},
		{"node port needs external traffic policy", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }, []want{required("spec.externalTrafficPolicy")}},
		{"session affinity", func(s *corev1.Service) { s.Spec.SessionAffinity = "Cookie" }, []want{notSupported("spec.sessionAffinity")}},
		{"client IP affinity needs a timeout", func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }, []want{required("spec.sessionAffinityConfig")}},
		{"affinity timeout range", func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: new(int32(86401))}}
		}, []want{invalid("spec.sessionAffinityConfig.clientIP.timeoutSeconds")}},
		{"cluster IPs follow cluster IP", func(s *corev1.Service) { s.Spec.ClusterIPs = []string{"10.96.0.11"} }, []want{invalid("spec.clusterIPs")}},
		{"cluster IP must be an IP", func(s *corev1.Service) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.300", []string{"10.96.0.300"}
		}, []want{invalid("spec.clusterIPs[0]")}},
		{"one IP per family", func(s *corev1.Service) { s.Spec.ClusterIPs = append(s.Spec.ClusterIPs, "10.96.0.11") }, []want{invalid("spec.clusterIPs")}},
		{"dual stack", func(s *corev1.Service) {
			s.Spec.ClusterIPs = append(s.Spec.ClusterIPs, "fd00::10")
			s.Spec.IPFamilies = append(s.Spec.IPFamilies, corev1.IPv6Protocol)
			s.Spec.IPFamilyPolicy = new(corev1.IPFamilyPolicyRequireDualStack)
		}, nil},
		{"family matches address", func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} }, []want{invalid("spec.clusterIPs[0]")}},
		{"ip family policy", func(s *corev1.Service) { s.Spec.IPFamilyPolicy = new(corev1.IPFamilyPolicy("DualStack")) }, []want{notSupported("spec.ipFamilyPolicy")}},
		{"load balancer may not be headless", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "None", []string{"None"}
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
			s.Spec.AllocateLoadBalancerNodePorts = new(true)
		}, []want{invalid("spec.clusterIPs[0]")}},
		{"external name", func(s *corev1.Service) {
			*s = *defaulted(&corev1.Service{
				ObjectMeta: s.ObjectMeta,
				Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com."},
			})
		}, nil},
		{"external name required", func(s *corev1.Service) {
			*s = *defaulted(&corev1.Service{ObjectMeta: s.ObjectMeta, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName}})
		}, []want{required("spec.externalName")}},
		{"external name has no cluster IP", func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeExternalName
			s.Spec.ExternalName = "db.example.com"
			s.Spec.IPFamilyPolicy = nil
			s.Spec.InternalTrafficPolicy = nil
			s.Spec.IPFamilies = nil
		}, []want{forbidden("spec.clusterIPs")}},
		{"external IPs", func(s *corev1.Service) {
			s.Spec.ExternalIPs = []string{"127.0.0.1"}
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		}, []want{invalid("spec.externalIPs[0]")}},
		{"selector labels", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "a b"} }, []want{invalid("spec.selector")}},
		{"source ranges only for load balancers", func(s *corev1.Service) {
			s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
		}, []want{forbidden("spec.loadBalancerSourceRanges")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svc := validService()
			tt.change(svc)
			expectErrors(t, ValidateCreate(svc), tt.wants...)
		})
	}
}

func TestValidateServiceUpdate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*corev1.Service)
		wants  []want
	}{
		{"ports may change", func(s *corev1.Service) { s.Spec.Ports[0].Port = 8080 }, nil},
		{"cluster IP is immutable", func(s *corev1.Service) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.11", []string{"10.96.0.11"}
		}, []want{invalid("spec.clusterIPs[0]")}},
		{"cluster IP may not be unset", func(s *corev1.Service) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil
		}, []want{invalid("spec.clusterIPs[0]")}},
		{"a second family may be added", func(s *corev1.Service) {
			s.Spec.ClusterIPs = append(s.Spec.ClusterIPs, "fd00::10")
			s.Spec.IPFamilies = append(s.Spec.IPFamilies, corev1.IPv6Protocol)
			s.Spec.IPFamilyPolicy = new(corev1.IPFamilyPolicyPreferDualStack)
		}, nil},
		{"family is immutable", func(s *corev1.Service) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = "fd00::10", []string{"fd00::10"}
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
		}, []want{invalid("spec.clusterIPs[0]"), invalid("spec.ipFamilies[0]")}},
		{"changing to external name drops the IP", func(s *corev1.Service) {
			*s = *defaulted(&corev1.Service{
				ObjectMeta: s.ObjectMeta,
				Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"},
			})
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			old := validService()
			svc := old.DeepCopy()
			tt.change(svc)
			expectErrors(t, ValidateUpdate(svc, old), tt.wants...)
		})
	}
}

func TestValidateEndpoints(t *testing.T) {
	t.Parallel()
	valid := func() *corev1.Endpoints {
		return defaulted(&corev1.Endpoints{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Subsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{{IP: "10.244.1.5", NodeName: new("node-1")}},
				Ports:     []corev1.EndpointPort{{Name: "http", Port: 80}, {Name: "https", Port: 443}},
			}},
		})
	}
	tests := []struct {
		name   string
		change func(*corev1.Endpoints)
		wants  []want
	}{
		{"valid", func(*corev1.Endpoints) {}, nil},
		{"addresses required", func(e *corev1.Endpoints) { e.Subsets[0].Addresses = nil }, []want{required("subsets[0]")}},
		{"address is an IP", func(e *corev1.Endpoints) { e.Subsets[0].Addresses[0].IP = "pod-1" }, []want{invalid("subsets[0].addresses[0].ip")}},
		{"address is not loopback", func(e *corev1.Endpoints) { e.Subsets[0].Addresses[0].IP = "127.0.0.1" }, []want{invalid("subsets[0].addresses[0].ip")}},
		{"port names with several ports", func(e *corev1.Endpoints) { e.Subsets[0].Ports[0].Name = "" }, []want{required("subsets[0].ports[0].name")}},
		{"port protocol", func(e *corev1.Endpoints) { e.Subsets[0].Ports[0].Protocol = "" }, []want{required("subsets[0].ports[0].protocol")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := valid()
			tt.change(e)
			expectErrors(t, ValidateCreate(e), tt.wants...)
		})
	}
}

func TestValidateEndpointSlice(t *testing.T) {
	t.Parallel()
	valid := func() *discoveryv1.EndpointSlice {
		return defaulted(&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "web-abcde", Namespace: "default", ResourceVersion: "1"},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, NodeName: new("node-1")}},
			Ports:       []discoveryv1.EndpointPort{{Name: new("http"), Port: new(int32(80))}},
		})
	}
	tests := []struct {
		name   string
		change func(*discoveryv1.EndpointSlice)
		wants  []want
	}{
		{"valid", func(*discoveryv1.EndpointSlice) {}, nil},
		{"address type required", func(e *discoveryv1.EndpointSlice) { e.AddressType = "" }, []want{required("addressType")}},
		{"address type values", func(e *discoveryv1.EndpointSlice) { e.AddressType = "IP" }, []want{notSupported("addressType")}},
		{"addresses required", func(e *discoveryv1.EndpointSlice) { e.Endpoints[0].Addresses = nil }, []want{required("endpoints[0].addresses")}},
		{"address of the slice's family", func(e *discoveryv1.EndpointSlice) { e.Endpoints[0].Addresses[0] = "fd00::5" }, []want{invalid("endpoints[0].addresses[0]")}},
		{"FQDN addresses", func(e *discoveryv1.EndpointSlice) {
			e.AddressType = discoveryv1.AddressTypeFQDN
			e.Endpoints[0].Addresses[0] = "db.example.com"
		}, nil},
		{"port names are unique", func(e *discoveryv1.EndpointSlice) {
			e.Ports = append(e.Ports, discoveryv1.EndpointPort{Name: new("http"), Port: new(int32(81)), Protocol: new(corev1.ProtocolTCP)})
		}, []want{duplicate("ports[1].name")}},
		{"port protocol", func(e *discoveryv1.EndpointSlice) { e.Ports[0].Protocol = new(corev1.Protocol("QUIC")) }, []want{notSupported("ports[0].protocol")}},
		{"too many endpoints", func(e *discoveryv1.EndpointSlice) {
			e.Endpoints = make([]discoveryv1.Endpoint, 1001)
		}, []want{tooMany("endpoints")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := valid()
			tt.change(e)
			expectErrors(t, ValidateCreate(e), tt.wants...)
		})
	}

	t.Run("address type is immutable", func(t *testing.T) {
		t.Parallel()
		old := valid()
		e := old.DeepCopy()
		e.AddressType = discoveryv1.AddressTypeIPv6
		e.Endpoints[0].Addresses[0] = "fd00::5"
		expectErrors(t, ValidateUpdate(e, old), invalid("addressType"))
	})
}

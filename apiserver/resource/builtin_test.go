package resource

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestKeepServiceAllocations(t *testing.T) {
	t.Parallel()
	single := corev1.IPFamilyPolicySingleStack
	nodePortSvc := func() *corev1.Service {
		return &corev1.Service{Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.9", ClusterIPs: []string{"10.96.0.9"},
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: &single,
			Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, NodePort: 30080}},
		}}
	}
	for _, c := range []struct {
		name   string
		edit   func(s *corev1.Service)
		expect func(s *corev1.Service)
	}{
		{
			name: "a PUT without allocations keeps them",
			edit: func(s *corev1.Service) {
				s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.IPFamilies = "", nil, nil
				s.Spec.Ports[0].NodePort = 0
			},
			expect: func(s *corev1.Service) {},
		},
		{
			name: "becoming ClusterIP drops the unchanged node ports",
			edit: func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP },
			expect: func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeClusterIP
				s.Spec.Ports[0].NodePort = 0
			},
		},
		{
			name: "becoming ExternalName drops cluster IPs, families and node ports",
			edit: func(s *corev1.Service) {
				s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.com"
			},
			expect: func(s *corev1.Service) {
				s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.com"
				s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.IPFamilies, s.Spec.IPFamilyPolicy = "", nil, nil, nil
				s.Spec.Ports[0].NodePort = 0
			},
		},
		{
			name: "a changed cluster IP is left for validation to reject",
			edit: func(s *corev1.Service) {
				s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}
			},
			expect: func(s *corev1.Service) {
				s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			old, got, want := nodePortSvc(), nodePortSvc(), nodePortSvc()
			c.edit(got)
			c.expect(want)
			keepServiceAllocations(got, old)
			if !reflect.DeepEqual(got.Spec, want.Spec) {
				t.Errorf("spec = %+v\nwant %+v", got.Spec, want.Spec)
			}
		})
	}
}

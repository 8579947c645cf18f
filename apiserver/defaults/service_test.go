package defaults

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestDefaultService(t *testing.T) {
	t.Parallel()
	single := corev1.IPFamilyPolicySingleStack
	cluster := corev1.ServiceInternalTrafficPolicyCluster
	tests := []struct {
		name string
		in   corev1.ServiceSpec
		want corev1.ServiceSpec
	}{
		{
			name: "cluster IP service",
			in: corev1.ServiceSpec{
				Selector: map[string]string{"app": "web"},
				Ports:    []corev1.ServicePort{{Port: 80}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")}},
			},
			want: corev1.ServiceSpec{
				Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{
					{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)},
					{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")},
				},
				Type:                  corev1.ServiceTypeClusterIP,
				SessionAffinity:       corev1.ServiceAffinityNone,
				InternalTrafficPolicy: &cluster,
				IPFamilyPolicy:        &single,
			},
		},
		{
			name: "node port service gets an external traffic policy",
			in:   corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
			want: corev1.ServiceSpec{
				Type:                  corev1.ServiceTypeNodePort,
				Ports:                 []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
				SessionAffinity:       corev1.ServiceAffinityNone,
				ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
				InternalTrafficPolicy: &cluster,
				IPFamilyPolicy:        &single,
			},
		},
		{
			name: "load balancer allocates node ports",
			in:   corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
			want: corev1.ServiceSpec{
				Type:                          corev1.ServiceTypeLoadBalancer,
				SessionAffinity:               corev1.ServiceAffinityNone,
				ExternalTrafficPolicy:         corev1.ServiceExternalTrafficPolicyCluster,
				InternalTrafficPolicy:         &cluster,
				IPFamilyPolicy:                &single,
				AllocateLoadBalancerNodePorts: new(true),
			},
		},
		{
			name: "client IP affinity gets a timeout",
			in:   corev1.ServiceSpec{SessionAffinity: corev1.ServiceAffinityClientIP},
			want: corev1.ServiceSpec{
				Type:            corev1.ServiceTypeClusterIP,
				SessionAffinity: corev1.ServiceAffinityClientIP,
				SessionAffinityConfig: &corev1.SessionAffinityConfig{
					ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: new(int32(10800))},
				},
				InternalTrafficPolicy: &cluster,
				IPFamilyPolicy:        &single,
			},
		},
		{
			name: "affinity config is dropped without affinity",
			in: corev1.ServiceSpec{SessionAffinityConfig: &corev1.SessionAffinityConfig{
				ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: new(int32(5))},
			}},
			want: corev1.ServiceSpec{
				Type:                  corev1.ServiceTypeClusterIP,
				SessionAffinity:       corev1.ServiceAffinityNone,
				InternalTrafficPolicy: &cluster,
				IPFamilyPolicy:        &single,
			},
		},
		{
			name: "cluster IP fills cluster IPs",
			in:   corev1.ServiceSpec{ClusterIP: "10.96.0.10"},
			want: corev1.ServiceSpec{
				Type:                  corev1.ServiceTypeClusterIP,
				ClusterIP:             "10.96.0.10",
				ClusterIPs:            []string{"10.96.0.10"},
				SessionAffinity:       corev1.ServiceAffinityNone,
				InternalTrafficPolicy: &cluster,
				IPFamilyPolicy:        &single,
			},
		},
		{
			name: "headless service without selector requires dual stack",
			in:   corev1.ServiceSpec{ClusterIP: "None"},
			want: corev1.ServiceSpec{
				Type:                  corev1.ServiceTypeClusterIP,
				ClusterIP:             "None",
				ClusterIPs:            []string{"None"},
				SessionAffinity:       corev1.ServiceAffinityNone,
				InternalTrafficPolicy: &cluster,
				IPFamilyPolicy:        new(corev1.IPFamilyPolicyRequireDualStack),
			},
		},
		{
			name: "external name service has no IP fields",
			in:   corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"},
			want: corev1.ServiceSpec{
				Type:            corev1.ServiceTypeExternalName,
				ExternalName:    "db.example.com",
				SessionAffinity: corev1.ServiceAffinityNone,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svc := &corev1.Service{Spec: tt.in}
			Default(svc)
			if !apiequality.Semantic.DeepEqual(svc.Spec, tt.want) {
				t.Fatalf("Default mismatch (-want +got):\n%s", diff.Diff(tt.want, svc.Spec))
			}
		})
	}
}

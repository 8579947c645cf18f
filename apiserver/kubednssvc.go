package apiserver

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubebus/kubebus/dns"
)

// KubeDNSServiceName is the cluster DNS's Service in kube-system.
const KubeDNSServiceName = "kube-dns"

// RunKubeDNSService keeps the `kube-dns` Service in kube-system, whose
// ClusterIP is the 10th address of serviceCIDR (dns.ServiceIP), until ctx
// ends; it logs its failures. The Service has no selector: the cluster
// DNS is no pod, and each `kubebus dns` publishes where it listens as an
// EndpointSlice of its own (see cmd/kubebus/app/dns.go).
func (s *Server) RunKubeDNSService(ctx context.Context, serviceCIDR string) error {
	ip, err := dns.ServiceIP(serviceCIDR)
	if err != nil {
		err = fmt.Errorf("kube-dns service: %w", err)
		s.log.ErrorContext(ctx, "no kube-dns service", "err", err)
		return err
	}
	desired := kubeDNSService(ip.String())
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		err := s.Ensure(ctx, corev1.SchemeGroupVersion.WithResource("services"), desired, reconcileKubeDNSService(desired))
		if err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "reconciling the kube-dns service", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// kubeDNSService is the desired kube-dns Service, with upstream's names,
// labels and ports.
func kubeDNSService(clusterIP string) *corev1.Service {
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{Kind: "Service", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: KubeDNSServiceName, Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: clusterIP, ClusterIPs: []string{clusterIP}, SessionAffinity: corev1.ServiceAffinityNone,
			Ports: []corev1.ServicePort{
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, TargetPort: intstr.FromInt32(53)},
			},
		},
	}
}

// reconcileKubeDNSService recreates a kube-dns Service whose ClusterIP is
// not the fixed one (an immutable field), restores its ports and removes a
// selector (which would make the endpoint controllers manage its
// endpoints); anything else a user changed is kept.
func reconcileKubeDNSService(desired *corev1.Service) Reconcile {
	return func(existing runtime.Object) (runtime.Object, bool, error) {
		cur, ok := existing.(*corev1.Service)
		if !ok {
			return nil, false, fmt.Errorf("kube-dns service: unexpected %T", existing)
		}
		if cur.Spec.ClusterIP != desired.Spec.ClusterIP || cur.Spec.Type != corev1.ServiceTypeClusterIP {
			return nil, false, ErrRecreate
		}
		if apiequality.Semantic.DeepEqual(cur.Spec.Ports, desired.Spec.Ports) && len(cur.Spec.Selector) == 0 {
			return existing, false, nil
		}
		u := cur.DeepCopy()
		u.Spec.Ports, u.Spec.Selector = desired.Spec.Ports, nil
		return u, true, nil
	}
}

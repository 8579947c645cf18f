package apiserver

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// KubernetesService says how this API server is reached from pods: the
// `kubernetes` Service in default (ClusterIP the first address of the
// service range, port 443) and its Endpoints and EndpointSlice, which list
// every live API server's advertised address, as upstream's endpoint
// reconciler does with its master leases.
type KubernetesService struct {
	// ClusterIP is the Service's address (the first of the service range).
	ClusterIP string
	// AdvertiseAddress and Port are where pods reach this API server.
	AdvertiseAddress string
	Port             int
	// ID names this API server among the others (unique per process).
	ID string
	// Interval is how often the objects are checked (default 10 s).
	Interval time.Duration
}

// publishable reports whether the advertised address may stand in
// Endpoints: a loopback address (an API server no pod can reach, as in
// the all-in-one without a node network namespace) may not, and then only
// the Service is kept.
func (k KubernetesService) publishable() bool {
	ip := net.ParseIP(k.AdvertiseAddress)
	return ip != nil && !ip.IsLoopback() && !ip.IsUnspecified() && !ip.IsLinkLocalUnicast()
}

// apiServerTTL bounds how long a dead API server stays in the endpoints.
const apiServerTTL = 15

// RunKubernetesService announces this API server and keeps the
// `kubernetes` Service, Endpoints and EndpointSlice until ctx ends.
func (s *Server) RunKubernetesService(ctx context.Context, k KubernetesService) error {
	if net.ParseIP(k.AdvertiseAddress) == nil || k.Port <= 0 {
		return fmt.Errorf("kubernetes service: bad advertise address %q port %d", k.AdvertiseAddress, k.Port)
	}
	if k.Interval <= 0 {
		k.Interval = 10 * time.Second
	}
	tick := time.NewTicker(k.Interval)
	defer tick.Stop()
	var lost <-chan struct{}
	for {
		if lost == nil && k.publishable() {
			done, err := s.store.Announce(ctx, "apiservers", k.ID, net.JoinHostPort(k.AdvertiseAddress, strconv.Itoa(k.Port)), apiServerTTL)
			if err != nil {
				s.log.WarnContext(ctx, "announcing this API server", "err", err)
			} else {
				lost = done
			}
		}
		if err := s.reconcileKubernetesService(ctx, k); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "reconciling the kubernetes service", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-lost:
			lost = nil
		case <-tick.C:
		}
	}
}

func (s *Server) reconcileKubernetesService(ctx context.Context, k KubernetesService) error {
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{Kind: "Service", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault, Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: k.ClusterIP, SessionAffinity: corev1.ServiceAffinityNone,
			Ports: []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(int32(k.Port))}},
		},
	}
	if err := s.Ensure(ctx, corev1.SchemeGroupVersion.WithResource("services"), svc, nil); err != nil {
		return fmt.Errorf("service: %w", err)
	}
	if !k.publishable() {
		return nil
	}
	announced, err := s.store.Announced(ctx, "apiservers")
	if err != nil {
		return err
	}
	byPort := map[int32][]string{}
	for _, hp := range announced {
		host, port, err := net.SplitHostPort(hp)
		if err != nil {
			continue
		}
		p, err := strconv.Atoi(port)
		if err != nil || net.ParseIP(host) == nil {
			continue
		}
		byPort[int32(p)] = append(byPort[int32(p)], host)
	}
	if len(byPort) == 0 {
		byPort[int32(k.Port)] = []string{k.AdvertiseAddress}
	}
	ports := make([]int32, 0, len(byPort))
	for p := range byPort {
		ports = append(ports, p)
	}
	slices.Sort(ports)
	ep := &corev1.Endpoints{
		TypeMeta:   metav1.TypeMeta{Kind: "Endpoints", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault, Labels: map[string]string{discoveryv1.LabelSkipMirror: "true"}},
	}
	var epSlices []*discoveryv1.EndpointSlice
	for _, p := range ports {
		hosts := byPort[p]
		slices.Sort(hosts)
		ss := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: "https", Port: p, Protocol: corev1.ProtocolTCP}}}
		sl := &discoveryv1.EndpointSlice{
			TypeMeta:    metav1.TypeMeta{Kind: "EndpointSlice", APIVersion: "discovery.k8s.io/v1"},
			ObjectMeta:  metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault, Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr("https"), Port: ptr(p), Protocol: ptr(corev1.ProtocolTCP)}},
		}
		if len(epSlices) > 0 {
			sl.Name = fmt.Sprintf("kubernetes-%d", p)
		}
		for _, h := range hosts {
			ss.Addresses = append(ss.Addresses, corev1.EndpointAddress{IP: h})
			sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{h}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}})
		}
		if net.ParseIP(hosts[0]).To4() == nil {
			sl.AddressType = discoveryv1.AddressTypeIPv6
		}
		ep.Subsets = append(ep.Subsets, ss)
		epSlices = append(epSlices, sl)
	}
	if err := s.Ensure(ctx, corev1.SchemeGroupVersion.WithResource("endpoints"), ep, replaceField(ep, func(o runtime.Object) any { return o.(*corev1.Endpoints).Subsets },
		func(o runtime.Object) { o.(*corev1.Endpoints).Subsets = ep.Subsets })); err != nil {
		return fmt.Errorf("endpoints: %w", err)
	}
	for _, sl := range epSlices {
		if err := s.Ensure(ctx, discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), sl, replaceField(sl, func(o runtime.Object) any {
			e := o.(*discoveryv1.EndpointSlice)
			return []any{e.Endpoints, e.Ports, e.AddressType}
		}, func(o runtime.Object) {
			e := o.(*discoveryv1.EndpointSlice)
			e.Endpoints, e.Ports, e.AddressType = sl.Endpoints, sl.Ports, sl.AddressType
		})); err != nil {
			return fmt.Errorf("endpointslice: %w", err)
		}
	}
	return nil
}

// replaceField is a Reconcile that sets what get reads from desired onto
// the stored object when they differ.
func replaceField(desired runtime.Object, get func(runtime.Object) any, set func(runtime.Object)) Reconcile {
	return func(existing runtime.Object) (runtime.Object, bool, error) {
		if apiequality.Semantic.DeepEqual(get(existing), get(desired)) {
			return existing, false, nil
		}
		u := existing.DeepCopyObject()
		set(u)
		return u, true, nil
	}
}

func ptr[T any](v T) *T { return &v }

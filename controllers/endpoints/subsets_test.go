package endpoints

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type podOpt func(*corev1.Pod)

func newPod(name, ip string, ready bool, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
	}
	if ip != "" {
		p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func newService(opts ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "svc-uid"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, ClusterIP: "10.96.0.10", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}}},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func addr(name, ip string) corev1.EndpointAddress {
	node := "node-1"
	return corev1.EndpointAddress{IP: ip, NodeName: &node, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
}

var httpPort = []corev1.EndpointPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}

func TestDesiredSubsets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		svc           *corev1.Service
		pods          []*corev1.Pod
		want          []corev1.EndpointSubset
		wantTruncated bool
	}{
		{name: "no pods", svc: newService(), want: []corev1.EndpointSubset{}},
		{name: "ready and not ready, sorted by IP",
			svc:  newService(),
			pods: []*corev1.Pod{newPod("b", "10.0.0.2", true), newPod("a", "10.0.0.10", true), newPod("c", "10.0.0.3", false)},
			want: []corev1.EndpointSubset{{
				Addresses:         []corev1.EndpointAddress{addr("b", "10.0.0.2"), addr("a", "10.0.0.10")},
				NotReadyAddresses: []corev1.EndpointAddress{addr("c", "10.0.0.3")},
				Ports:             httpPort,
			}}},
		{name: "pods without an IP, finished or terminating are left out",
			svc: newService(),
			pods: []*corev1.Pod{
				newPod("noip", "", true),
				newPod("done", "10.0.0.4", false, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
				newPod("failed", "10.0.0.5", false, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
				newPod("term", "10.0.0.6", true, func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }),
				newPod("ok", "10.0.0.7", true),
			},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("ok", "10.0.0.7")}, Ports: httpPort}}},
		{name: "other namespaces are left out",
			svc:  newService(),
			pods: []*corev1.Pod{newPod("x", "10.0.0.8", true, func(p *corev1.Pod) { p.Namespace = "other" })},
			want: []corev1.EndpointSubset{}},
		{name: "publishNotReadyAddresses lists everyone as ready, terminating too",
			svc: newService(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }),
			pods: []*corev1.Pod{newPod("a", "10.0.0.1", false),
				newPod("t", "10.0.0.2", true, func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} })},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.0.0.1"), addr("t", "10.0.0.2")}, Ports: httpPort}}},
		{name: "a named port a pod lacks leaves the pod out",
			svc:  newService(),
			pods: []*corev1.Pod{newPod("a", "10.0.0.1", true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil })},
			want: []corev1.EndpointSubset{}},
		{name: "pods resolving a named port differently get separate subsets",
			svc: newService(),
			pods: []*corev1.Pod{newPod("a", "10.0.0.1", true),
				newPod("b", "10.0.0.2", true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 9090 })},
			want: []corev1.EndpointSubset{
				{Addresses: []corev1.EndpointAddress{addr("a", "10.0.0.1")}, Ports: httpPort},
				{Addresses: []corev1.EndpointAddress{addr("b", "10.0.0.2")}, Ports: []corev1.EndpointPort{{Name: "http", Port: 9090, Protocol: corev1.ProtocolTCP}}},
			}},
		{name: "numbered, named UDP and sidecar ports",
			svc: newService(func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{
					{Name: "num", Port: 81, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(7000)},
					{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")},
					{Name: "side", Port: 82, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("metrics")},
					{Name: "dflt", Port: 83, Protocol: corev1.ProtocolTCP},
				}
			}),
			pods: []*corev1.Pod{newPod("a", "10.0.0.1", true, func(p *corev1.Pod) {
				always := corev1.ContainerRestartPolicyAlways
				p.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: &always, Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9100}}}}
			})},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.0.0.1")}, Ports: []corev1.EndpointPort{
				{Name: "dflt", Port: 83, Protocol: corev1.ProtocolTCP},
				{Name: "dns", Port: 5353, Protocol: corev1.ProtocolUDP},
				{Name: "num", Port: 7000, Protocol: corev1.ProtocolTCP},
				{Name: "side", Port: 9100, Protocol: corev1.ProtocolTCP},
			}}}},
		{name: "headless without ports lists addresses without ports",
			svc: newService(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone; s.Spec.Ports = nil }),
			pods: []*corev1.Pod{newPod("a", "10.0.0.1", true, func(p *corev1.Pod) {
				p.Spec.Hostname, p.Spec.Subdomain = "a-host", "web"
			})},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{func() corev1.EndpointAddress {
				a := addr("a", "10.0.0.1")
				a.Hostname = "a-host"
				return a
			}()}}}},
		{name: "a cluster IP service without ports has none",
			svc:  newService(func(s *corev1.Service) { s.Spec.Ports = nil }),
			pods: []*corev1.Pod{newPod("a", "10.0.0.1", true)},
			want: []corev1.EndpointSubset{}},
		{name: "the address of the service's family",
			svc: newService(func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} }),
			pods: []*corev1.Pod{newPod("a", "10.0.0.1", true, func(p *corev1.Pod) {
				p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}}
			}), newPod("v4only", "10.0.0.2", true)},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "fd00::1")}, Ports: httpPort}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, truncated := desiredSubsets(tc.svc, tc.pods)
			if truncated != tc.wantTruncated {
				t.Errorf("truncated = %v, want %v", truncated, tc.wantTruncated)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("subsets (-want +got):\n%s", diff.Diff(tc.want, got))
			}
		})
	}
}

func TestDesiredSubsetsTruncatesNotReadyFirst(t *testing.T) {
	t.Parallel()
	var pods []*corev1.Pod
	for i := range MaxAddresses + 10 {
		pods = append(pods, newPod(fmt.Sprintf("p%d", i), fmt.Sprintf("10.1.%d.%d", i/250, i%250+1), i >= 20))
	}
	got, truncated := desiredSubsets(newService(), pods)
	if !truncated {
		t.Fatal("not truncated")
	}
	if len(got) != 1 || len(got[0].Addresses) != MaxAddresses-10 || len(got[0].NotReadyAddresses) != 10 {
		t.Fatalf("got %d subsets; first has %d ready and %d not ready, want %d and 10",
			len(got), len(got[0].Addresses), len(got[0].NotReadyAddresses), MaxAddresses-10)
	}
}

func TestDesiredLabels(t *testing.T) {
	t.Parallel()
	svc := newService(func(s *corev1.Service) {
		s.Labels = map[string]string{"team": "a", LabelHeadless: ""}
	})
	want := map[string]string{"team": "a", LabelManagedBy: ManagedByValue}
	if got := desiredLabels(svc); !reflect.DeepEqual(got, want) {
		t.Fatalf("labels = %v, want %v", got, want)
	}
	svc.Spec.ClusterIP = corev1.ClusterIPNone
	want[LabelHeadless] = ""
	if got := desiredLabels(svc); !reflect.DeepEqual(got, want) {
		t.Fatalf("headless labels = %v, want %v", got, want)
	}
}

package nft

import (
	"context"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/proxy/rules"
	"github.com/kubebus/kubebus/test/harness/netns"
	"github.com/kubebus/kubebus/test/prereq"
)

// cluster returns n Services of one port with 5 ready endpoints each.
func cluster(n int) rules.Input {
	var in rules.Input
	p, tcp, name := int32(8080), corev1.ProtocolTCP, ""
	for i := range n {
		ip := fmt.Sprintf("10.96.%d.%d", i/250, i%250+1)
		svcName := fmt.Sprintf("svc-%d", i)
		in.Services = append(in.Services, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: svcName},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: ip, ClusterIPs: []string{ip}, Ports: []corev1.ServicePort{{Port: 80, Protocol: tcp}}},
		})
		s := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "bench", Name: svcName + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: svcName}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &p, Protocol: &tcp}},
		}
		for e := range 5 {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", 100+e, i/250, i%250+1)}})
		}
		in.EndpointSlices = append(in.EndpointSlices, s)
	}
	return in
}

func benchApplier(b *testing.B) *Applier {
	b.Helper()
	if os.Geteuid() != 0 {
		prereq.Missing(b, "needs root to create a network namespace")
	}
	n := netns.New(b)
	f, err := os.Open(n.Path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	a, err := New(Config{NetNSFd: int(f.Fd())})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// moveEndpoint gives Service 5000's first endpoint the i-th new address,
// replacing its EndpointSlice as an informer does.
func moveEndpoint(in rules.Input, i int) {
	c := in.EndpointSlices[5000].DeepCopy()
	c.Endpoints[0].Addresses = []string{fmt.Sprintf("10.200.%d.%d", i/250%250, i%250+1)}
	in.EndpointSlices[5000] = c
}

// BenchmarkFullSync is a full sync (build + replace the table) of n
// Services with 5 endpoints each.
func BenchmarkFullSync(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			in := cluster(n)
			a := benchApplier(b)
			for b.Loop() {
				a.tables[rules.IPv4].last = nil
				if err := a.Apply(context.Background(), rules.Build(in)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOneServiceChange is a sync (build with the proxy's Builder, which
// reuses unchanged Services, + diff apply) after one Service's endpoints
// changed, at 10,000 Services.
func BenchmarkOneServiceChange(b *testing.B) {
	in := cluster(10000)
	a := benchApplier(b)
	if err := a.Apply(context.Background(), rules.Build(in)); err != nil {
		b.Fatal(err)
	}
	var builder rules.Builder
	builder.Build(in)
	i := 0
	for b.Loop() {
		i++
		moveEndpoint(in, i)
		if err := a.Apply(context.Background(), builder.Build(in)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuild is the pure builder alone.
func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			in := cluster(n)
			for b.Loop() {
				rules.Build(in)
			}
		})
	}
}

// BenchmarkOneServiceChangeApply is the diff apply alone (rulesets built
// beforehand) of one Service's endpoint change at 10,000 Services.
func BenchmarkOneServiceChangeApply(b *testing.B) {
	in := cluster(10000)
	a := benchApplier(b)
	rs := [2]*rules.Ruleset{rules.Build(in)}
	c := in.EndpointSlices[5000].DeepCopy()
	c.Endpoints[0].Addresses = []string{"10.200.0.1"}
	in.EndpointSlices[5000] = c
	rs[1] = rules.Build(in)
	if err := a.Apply(context.Background(), rs[0]); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		if err := a.Apply(context.Background(), rs[i%2]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOneServiceChangeBuild is the proxy's Builder alone after one
// Service's endpoints changed, at 10,000 Services.
func BenchmarkOneServiceChangeBuild(b *testing.B) {
	in := cluster(10000)
	var builder rules.Builder
	builder.Build(in)
	i := 0
	for b.Loop() {
		i++
		moveEndpoint(in, i)
		builder.Build(in)
	}
}

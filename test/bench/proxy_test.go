package bench

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubebus/kubebus/test/harness"
	"github.com/kubebus/kubebus/test/harness/netns"
)

// BenchmarkProxyUnreadyCutoff: a `kubebus proxy` process programs the
// Service "web" (two real HTTP backends in network namespaces of their
// own) into a node namespace; each iteration flips the second backend's
// ready condition in web's EndpointSlice through the API and measures, by
// traffic from a client namespace (new connections a few ms apart), how
// long after the update call returned the change took effect: for
// "unready" the first of 10 consecutive connections that all reach pod-a,
// for "ready" the first connection that reaches pod-b again. Iterations
// alternate, so run it with -benchtime 20x (ten of each).
func BenchmarkProxyUnreadyCutoff(b *testing.B) {
	const podA, podB = "10.244.1.2", "10.244.2.2"
	harness.SkipShort(b)
	nodePath := harness.NodeNetNS(b)
	node := &netns.Node{Name: filepath.Base(nodePath), Path: nodePath}
	nsA, nsB, nsClient := netns.New(b), netns.New(b), netns.New(b)
	netns.Link(b, node, nsA, "pa", "10.244.1.1", podA)
	netns.Link(b, node, nsB, "pb", "10.244.2.1", podB)
	netns.Link(b, node, nsClient, "cl", "10.250.0.1", "10.250.0.2")
	if _, err := node.Exec("sysctl", "-qw", "net.ipv4.ip_forward=1"); err != nil {
		b.Fatal(err)
	}
	nsA.ServeHTTP(b, podA+":8080", "pod-a")
	nsB.ServeHTTP(b, podB+":8080", "pod-b")
	client := nsClient.Dialer(b)

	s := harness.StartServer(b, "", "--disable-controller-manager", "--disable-admission-plugins=ServiceAccount")
	cs := s.Clientset(b)
	harness.StartProcess(b, "proxy", "--kubeconfig", s.Kubeconfig, "--nats-url", s.BusURL(b), "--node-netns", nodePath,
		"--hostname-override", "proxy-bench", "--metrics-bind-address", "")
	ctx := context.Background()
	svc, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
	}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	addr := net.JoinHostPort(svc.Spec.ClusterIP, "80")
	port, pname, proto, ready := int32(8080), "http", corev1.ProtocolTCP, true
	slice, err := cs.DiscoveryV1().EndpointSlices("default").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{podA}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}},
			{Addresses: []string{podB}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}},
		},
		Ports: []discoveryv1.EndpointPort{{Name: &pname, Port: &port, Protocol: &proto}},
	}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	// Steady state: both backends answer.
	harness.Eventually(b, 60*time.Second, func() error {
		got := map[string]int{}
		for range 20 {
			body, err := client.Get(addr, 5*time.Second)
			if err != nil {
				return err
			}
			got[body]++
		}
		if got["pod-a"] == 0 || got["pod-b"] == 0 {
			return fmt.Errorf("want both backends, got %v", got)
		}
		return nil
	})

	const probeGap, deadline = 2 * time.Millisecond, 30 * time.Second
	var unready, readyAgain []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		toReady := i%2 == 1
		sl := slice.DeepCopy()
		sl.Endpoints[1].Conditions.Ready = &toReady
		if slice, err = cs.DiscoveryV1().EndpointSlices("default").Update(ctx, sl, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		updated := time.Now()
		var streak int
		var first time.Time
		for {
			if time.Since(updated) > deadline {
				b.Fatalf("iteration %d (pod-b ready=%v): not in effect after %v", i, toReady, deadline)
			}
			start := time.Now()
			body, err := client.Get(addr, 5*time.Second)
			if err != nil {
				b.Fatalf("probe: %v", err)
			}
			if toReady {
				if body == "pod-b" {
					readyAgain = append(readyAgain, start.Sub(updated))
					break
				}
			} else {
				if body != "pod-a" {
					streak = 0
				} else if streak++; streak == 1 {
					first = start
				}
				if streak == 10 {
					unready = append(unready, first.Sub(updated))
					break
				}
			}
			time.Sleep(probeGap)
		}
	}
	b.StopTimer()
	report := func(name string, ds []time.Duration) {
		if len(ds) == 0 {
			return
		}
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, name+"-p50-ms")
		b.ReportMetric(float64(ds[len(ds)-1].Microseconds())/1000, name+"-max-ms")
	}
	report("unready", unready)
	report("ready", readyAgain)
}

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubebus/kubebus/test/harness"
)

// TestIntegrationProxyProgramsFromBus: `kubebus proxy` reads Services and
// EndpointSlices from the bus and programs them into the nftables of a
// node network namespace; a Service change and its deletion follow.
func TestIntegrationProxyProgramsFromBus(t *testing.T) {
	harness.SkipShort(t)
	ns := harness.NodeNetNS(t)
	s := harness.StartServer(t, "", "--disable-controller-manager", noServiceAccounts)
	cs := s.Clientset(t)
	ctx := context.Background()
	harness.StartProcess(t, "proxy", "--kubeconfig", s.Kubeconfig, "--nats-url", s.BusURL(t), "--node-netns", ns, "--hostname-override", "proxy-e2e", "--metrics-bind-address", "")
	svc, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"},
		Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP == "" {
		t.Fatal("the Service got no cluster IP")
	}
	ready, port, name, proto := true, int32(8080), "http", corev1.ProtocolTCP
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.9.7"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
	}
	if _, err := cs.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nft := func() string {
		out, err := exec.Command("ip", "netns", "exec", filepath.Base(ns), "nft", "list", "table", "ip", "kubebus").CombinedOutput()
		if err != nil {
			return "error: " + err.Error() + ": " + string(out)
		}
		return string(out)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		out := nft()
		if !strings.Contains(out, svc.Spec.ClusterIP+" . tcp . 80") || !strings.Contains(out, "10.244.9.7:8080") {
			return fmt.Errorf("the ruleset lacks the Service or its endpoint:\n%s", out)
		}
		return nil
	})
	// The host's own nftables hold nothing of it.
	if out, err := exec.Command("nft", "list", "table", "ip", "kubebus").CombinedOutput(); err == nil {
		t.Fatalf("the proxy programmed the host's nftables:\n%s", out)
	}
	if err := cs.CoreV1().Services("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		if out := nft(); strings.Contains(out, svc.Spec.ClusterIP) {
			return fmt.Errorf("the deleted Service is still programmed:\n%s", out)
		}
		return nil
	})
}

// TestIntegrationProxyIPv6FromBus: on a cluster whose Service range is
// IPv6, the proxy programs the Service into its ip6 table, and only there.
func TestIntegrationProxyIPv6FromBus(t *testing.T) {
	harness.SkipShort(t)
	ns := harness.NodeNetNS(t)
	s := harness.StartServer(t, "", "--disable-controller-manager", noServiceAccounts, "--service-cluster-ip-range", "fd00:10:96::/112")
	cs := s.Clientset(t)
	ctx := context.Background()
	harness.StartProcess(t, "proxy", "--kubeconfig", s.Kubeconfig, "--nats-url", s.BusURL(t), "--node-netns", ns, "--hostname-override", "proxy-e2e6", "--metrics-bind-address", "")
	svc, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web6"}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svc.Spec.ClusterIP, ":") {
		t.Fatalf("the Service got cluster IP %q, want one from the IPv6 range", svc.Spec.ClusterIP)
	}
	ready, port, name, proto := true, int32(8080), "http", corev1.ProtocolTCP
	if _, err := cs.DiscoveryV1().EndpointSlices("default").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web6-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web6"}},
		AddressType: discoveryv1.AddressTypeIPv6,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"fd00:10:244:9::7"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list := func(family string) string {
		out, err := exec.Command("ip", "netns", "exec", filepath.Base(ns), "nft", "list", "table", family, "kubebus").CombinedOutput()
		if err != nil {
			return "error: " + err.Error() + ": " + string(out)
		}
		return string(out)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		out := list("ip6")
		if !strings.Contains(out, svc.Spec.ClusterIP+" . tcp . 80") || !strings.Contains(out, "[fd00:10:244:9::7]:8080") {
			return fmt.Errorf("the ip6 table lacks the Service or its endpoint:\n%s", out)
		}
		return nil
	})
	if out := list("ip"); strings.Contains(out, svc.Spec.ClusterIP) || strings.Contains(out, "fd00:10:244:9::7") {
		t.Errorf("the IPv6 Service is in the ip table too:\n%s", out)
	}
}

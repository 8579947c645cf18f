package nft

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/proxy/rules"
	"github.com/kubebus/kubebus/test/harness/netns"
	"github.com/kubebus/kubebus/test/prereq"
)

func needRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test skipped under -short")
	}
	if os.Geteuid() != 0 {
		prereq.Missing(t, "needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		prereq.Missing(t, "needs the ip tool (Debian package iproute2)")
	}
}

// get fetches http://addr/ from inside ns on a fresh connection.
func get(n *netns.Node, addr string) (string, error) {
	var conn net.Conn
	if err := n.Do(func() (err error) {
		conn, err = net.DialTimeout("tcp", addr, 5*time.Second)
		return err
	}); err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "GET / HTTP/1.0\r\nHost: x\r\n\r\n")
	b, err := io.ReadAll(conn)
	if err != nil {
		return "", err
	}
	_, body, _ := cutBody(string(b))
	return body, nil
}

func cutBody(s string) (string, string, bool) {
	for i := 0; i+4 <= len(s); i++ {
		if s[i:i+4] == "\r\n\r\n" {
			return s[:i], s[i+4:], true
		}
	}
	return s, "", false
}

type testbed struct {
	node, podA, podB, client *netns.Node
	applier                  *Applier
}

func newTestbed(t *testing.T) *testbed {
	needRoot(t)
	tb := &testbed{node: netns.New(t), podA: netns.New(t), podB: netns.New(t), client: netns.New(t)}
	netns.Link(t, tb.node, tb.podA, "pa", "10.244.1.1", "10.244.1.2")
	netns.Link(t, tb.node, tb.podB, "pb", "10.244.2.1", "10.244.2.2")
	netns.Link(t, tb.node, tb.client, "cl", "10.250.0.1", "10.250.0.2")
	// The node's own default route (a real node has one): without a route
	// to the ClusterIP, local connections fail before the nat hook.
	tb.node.AddAddress(t, "up0", "192.0.2.1/24")
	if _, err := tb.node.Exec("sysctl", "-qw", "net.ipv4.ip_forward=1"); err != nil {
		t.Fatal(err)
	}
	tb.podA.ServeHTTP(t, "10.244.1.2:8080", "pod-a")
	tb.podB.ServeHTTP(t, "10.244.2.2:8080", "pod-b")
	f, err := os.Open(tb.node.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if tb.applier, err = New(Config{NetNSFd: int(f.Fd())}); err != nil {
		t.Fatal(err)
	}
	return tb
}

func (tb *testbed) apply(t *testing.T, affinity bool, ready ...string) {
	t.Helper()
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"},
			Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}}},
	}
	if affinity {
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	}
	p, tcp, name := int32(8080), corev1.ProtocolTCP, ""
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &p, Protocol: &tcp}},
	}
	for _, ip := range ready {
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}})
	}
	rs := rules.Build(rules.Input{Services: []*corev1.Service{s}, EndpointSlices: []*discoveryv1.EndpointSlice{sl}})
	if err := tb.applier.Apply(context.Background(), rs); err != nil {
		t.Fatalf("apply: %v", err)
	}
}

func (tb *testbed) hits(t *testing.T, from *netns.Node, addr string, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range n {
		body, err := get(from, addr)
		if err != nil {
			t.Fatalf("GET %s: %v", addr, err)
		}
		got[body]++
	}
	return got
}

func TestIntegrationClusterIPNodePortRejectAffinity(t *testing.T) {
	tb := newTestbed(t)
	ctx := context.Background()

	tb.apply(t, false, "10.244.1.2", "10.244.2.2")
	for _, from := range []*netns.Node{tb.client, tb.node} {
		got := tb.hits(t, from, "10.96.0.10:80", 40)
		if got["pod-a"] == 0 || got["pod-b"] == 0 || got["pod-a"]+got["pod-b"] != 40 {
			t.Errorf("ClusterIP from %s: want both backends, got %v", from.Name, got)
		}
	}
	if got := tb.hits(t, tb.client, "10.250.0.1:30080", 20); got["pod-a"]+got["pod-b"] != 20 {
		t.Errorf("NodePort: want answers from the backends, got %v", got)
	}

	// A backend gone: only the other answers (diff apply).
	tb.apply(t, false, "10.244.2.2")
	if got := tb.hits(t, tb.client, "10.96.0.10:80", 20); got["pod-b"] != 20 {
		t.Errorf("after pod-a left: got %v", got)
	}

	// Hairpin: the only backend reaches its own Service (masqueraded, or
	// it would get the reply from its own address).
	tb.apply(t, false, "10.244.1.2")
	if got := tb.hits(t, tb.podA, "10.96.0.10:80", 5); got["pod-a"] != 5 {
		t.Errorf("hairpin: got %v", got)
	}

	// No endpoints: rejected, not timed out.
	tb.apply(t, false)
	for _, from := range []*netns.Node{tb.client, tb.node} {
		for _, addr := range []string{"10.96.0.10:80", "10.250.0.1:30080"} {
			if from == tb.node && addr == "10.250.0.1:30080" {
				continue
			}
			_, err := get(from, addr)
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("%s from %s with no endpoints: want connection refused, got %v", addr, from.Name, err)
			}
		}
	}

	// ClientIP affinity: one client stays on one backend.
	tb.apply(t, true, "10.244.1.2", "10.244.2.2")
	if got := tb.hits(t, tb.client, "10.96.0.10:80", 20); len(got) != 1 {
		t.Errorf("affinity: want one backend, got %v", got)
	}

	if err := tb.applier.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if out, err := tb.node.Exec("nft", "list", "tables"); err != nil || out != "" {
		t.Errorf("after cleanup: nft list tables = %q, %v", out, err)
	}
	if err := tb.applier.Cleanup(ctx); err != nil {
		t.Errorf("second cleanup: %v", err)
	}
}

// link6 gives a link made by netns.Link IPv6 addresses too: nodeAddr and
// otherAddr in a /64, other's default IPv6 route through node.
func link6(t *testing.T, node, other *netns.Node, dev, nodeAddr, otherAddr string) {
	t.Helper()
	for _, c := range []struct {
		n    *netns.Node
		args []string
	}{
		{node, []string{"-6", "addr", "add", nodeAddr + "/64", "dev", dev, "nodad"}},
		{other, []string{"-6", "addr", "add", otherAddr + "/64", "dev", dev + "p", "nodad"}},
		{other, []string{"-6", "route", "add", "default", "via", nodeAddr}},
	} {
		if _, err := c.n.IP(c.args...); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIntegrationIPv6 programs the ip6 table beside the ip one: an IPv6
// ClusterIP reaches both backends, NodePort, hairpin, reject without
// endpoints, and cleanup removes both tables.
func TestIntegrationIPv6(t *testing.T) {
	tb := newTestbed(t)
	ctx := context.Background()
	link6(t, tb.node, tb.podA, "pa", "fd00:1::1", "fd00:1::2")
	link6(t, tb.node, tb.podB, "pb", "fd00:2::1", "fd00:2::2")
	link6(t, tb.node, tb.client, "cl", "fd00:3::1", "fd00:3::2")
	if _, err := tb.node.Exec("sysctl", "-qw", "net.ipv6.conf.all.forwarding=1"); err != nil {
		t.Fatal(err)
	}
	// The node's own IPv6 default route (to a gateway that never answers),
	// as for IPv4: without a route, the kernel answers "no route" before
	// the filter hooks see the packet.
	for _, args := range [][]string{{"-6", "addr", "add", "fd00:ff::1/64", "dev", "up0", "nodad"}, {"-6", "route", "add", "default", "via", "fd00:ff::2", "dev", "up0"}} {
		if _, err := tb.node.IP(args...); err != nil {
			t.Fatal(err)
		}
	}
	tb.podA.ServeHTTP(t, "[fd00:1::2]:8080", "pod-a6")
	tb.podB.ServeHTTP(t, "[fd00:2::2]:8080", "pod-b6")
	apply6 := func(ready ...string) {
		t.Helper()
		s := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10", "fd00:96::a"},
				Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}}},
		}
		p, tcp, name := int32(8080), corev1.ProtocolTCP, ""
		sl := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "web-6", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv6,
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &p, Protocol: &tcp}},
		}
		for _, ip := range ready {
			sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}})
		}
		rs := rules.Build(rules.Input{Family: rules.IPv6, Services: []*corev1.Service{s}, EndpointSlices: []*discoveryv1.EndpointSlice{sl}})
		if err := tb.applier.Apply(ctx, rs); err != nil {
			t.Fatalf("apply: %v", err)
		}
	}

	tb.apply(t, false, "10.244.1.2") // the ip table beside it
	apply6("fd00:1::2", "fd00:2::2")
	if got := tb.hits(t, tb.client, "[fd00:96::a]:80", 40); got["pod-a6"] == 0 || got["pod-b6"] == 0 || got["pod-a6"]+got["pod-b6"] != 40 {
		t.Errorf("IPv6 ClusterIP: want both backends, got %v", got)
	}
	if got := tb.hits(t, tb.client, "10.96.0.10:80", 5); got["pod-a"] != 5 {
		t.Errorf("the IPv4 ClusterIP beside it: got %v", got)
	}
	if got := tb.hits(t, tb.client, "[fd00:3::1]:30080", 10); got["pod-a6"]+got["pod-b6"] != 10 {
		t.Errorf("IPv6 NodePort: got %v", got)
	}

	apply6("fd00:1::2")
	if got := tb.hits(t, tb.podA, "[fd00:96::a]:80", 5); got["pod-a6"] != 5 {
		t.Errorf("IPv6 hairpin: got %v", got)
	}

	apply6()
	if _, err := get(tb.client, "[fd00:96::a]:80"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("IPv6 ClusterIP with no endpoints: want connection refused, got %v", err)
	}

	// The family probe leaves the tables as they are.
	before, _ := tb.node.Exec("nft", "list", "ruleset")
	for _, f := range []rules.Family{rules.IPv4, rules.IPv6} {
		if err := tb.applier.Supports(ctx, f); err != nil {
			t.Errorf("Supports(%s): %v", f, err)
		}
	}
	if after, _ := tb.node.Exec("nft", "list", "ruleset"); after != before {
		t.Errorf("the family probe changed the ruleset:\n%s\nwas:\n%s", after, before)
	}

	if err := tb.applier.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if out, err := tb.node.Exec("nft", "list", "tables"); err != nil || out != "" {
		t.Errorf("after cleanup: nft list tables = %q, %v", out, err)
	}
}

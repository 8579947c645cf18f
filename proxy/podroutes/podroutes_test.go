package podroutes

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name string, cidrs []string, ips ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDRs: cidrs}}
	for _, ip := range ips {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	return n
}

func TestDesired(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		nodes []*corev1.Node
		want  string
	}{
		{"none but self", []*corev1.Node{node("a", []string{"10.244.0.0/24"}, "172.28.0.61")}, "[]"},
		{"two others, sorted by destination", []*corev1.Node{
			node("c", []string{"10.244.2.0/24"}, "172.28.0.63"),
			node("a", []string{"10.244.0.0/24"}, "172.28.0.61"),
			node("b", []string{"10.244.1.0/24"}, "172.28.0.62"),
		}, "[10.244.1.0/24 via 172.28.0.62 10.244.2.0/24 via 172.28.0.63]"},
		{"no podCIDR yet", []*corev1.Node{node("b", nil, "172.28.0.62")}, "[]"},
		{"no InternalIP yet", []*corev1.Node{node("b", []string{"10.244.1.0/24"})}, "[]"},
		{"the legacy podCIDR field", []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24"},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "172.28.0.62"}}}}},
			"[10.244.1.0/24 via 172.28.0.62]"},
		{"dual stack: each family through its own address", []*corev1.Node{
			node("b", []string{"10.244.1.0/24", "fd00:10:244:1::/64"}, "172.28.0.62", "fd00::62"),
		}, "[10.244.1.0/24 via 172.28.0.62 fd00:10:244:1::/64 via fd00::62]"},
		{"an IPv6 podCIDR with only an IPv4 address", []*corev1.Node{node("b", []string{"fd00:10:244:1::/64"}, "172.28.0.62")}, "[]"},
		{"a bad podCIDR is skipped", []*corev1.Node{node("b", []string{"nonsense", "10.244.1.0/24"}, "172.28.0.62")}, "[10.244.1.0/24 via 172.28.0.62]"},
		{"a host address in podCIDR is masked", []*corev1.Node{node("b", []string{"10.244.1.7/24"}, "172.28.0.62")}, "[10.244.1.0/24 via 172.28.0.62]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := fmt.Sprint(Desired("a", c.nodes)); got != c.want {
				t.Errorf("Desired = %s, want %s", got, c.want)
			}
		})
	}
}

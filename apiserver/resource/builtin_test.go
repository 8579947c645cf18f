package resource

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// TestNodePodCIDR: spec.podCIDR is the first of spec.podCIDRs as the API
// stores a node, so the rule that the list, once set, never changes
// holds for the single field too: a kubelet cannot rewrite its podCIDR
// (to the whole cluster range, making the IPAM think every subnet taken).
func TestNodePodCIDR(t *testing.T) {
	t.Parallel()
	var nodes *Resource
	for _, r := range Builtin() {
		if r.Plural == "nodes" {
			nodes = r
		}
	}
	if nodes == nil {
		t.Fatal("no nodes resource")
	}
	node := func(single string, list ...string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "1"}, Spec: corev1.NodeSpec{PodCIDR: single, PodCIDRs: list}}
	}
	created := node("10.244.1.0/24")
	nodes.PrepareForCreate(created)
	if created.Spec.PodCIDR != "10.244.1.0/24" || !reflect.DeepEqual(created.Spec.PodCIDRs, []string{"10.244.1.0/24"}) {
		t.Errorf("a podCIDR alone: stored %q %v, want it in podCIDRs too", created.Spec.PodCIDR, created.Spec.PodCIDRs)
	}
	old := node("10.244.1.0/24", "10.244.1.0/24")
	for _, c := range []struct {
		name    string
		upd     *corev1.Node
		refused bool
		want    string
	}{
		{"podCIDR rewritten beside the list is ignored", node("10.244.0.0/16", "10.244.1.0/24"), false, "10.244.1.0/24"},
		{"podCIDR rewritten without the list", node("10.244.0.0/16"), true, ""},
		{"podCIDR set to garbage without the list", node("garbage"), true, ""},
		{"unchanged", node("10.244.1.0/24", "10.244.1.0/24"), false, "10.244.1.0/24"},
	} {
		nodes.PrepareForUpdate(c.upd, old)
		errs := nodes.ValidateUpdate(c.upd, old)
		if (len(errs) > 0) != c.refused {
			t.Errorf("%s: errors %v, want refused=%v", c.name, errs, c.refused)
		}
		if !c.refused && c.upd.Spec.PodCIDR != c.want {
			t.Errorf("%s: stored podCIDR %q, want %q", c.name, c.upd.Spec.PodCIDR, c.want)
		}
	}
	// A node stored before podCIDRs was kept beside podCIDR: its podCIDR
	// is set once all the same.
	legacy := node("10.244.1.0/24")
	rewritten := node("10.244.0.0/16")
	nodes.PrepareForUpdate(rewritten, legacy)
	if errs := nodes.ValidateUpdate(rewritten, legacy); len(errs) == 0 {
		t.Errorf("rewriting the podCIDR of a node stored with podCIDR alone: allowed, stored %q", rewritten.Spec.PodCIDR)
	}
	kept := node("10.244.1.0/24")
	nodes.PrepareForUpdate(kept, legacy)
	if errs := nodes.ValidateUpdate(kept, legacy); len(errs) > 0 {
		t.Errorf("keeping the podCIDR of a node stored with podCIDR alone: %v", errs)
	}
	unset := node("")
	set := node("10.244.2.0/24")
	nodes.PrepareForUpdate(set, unset)
	if errs := nodes.ValidateUpdate(set, unset); len(errs) > 0 {
		t.Errorf("setting a podCIDR the first time: %v", errs)
	}
}

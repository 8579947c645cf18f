package rules

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func svc(ns, name, typ, ip string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceType(typ), ClusterIP: ip, ClusterIPs: []string{ip}, Ports: ports},
	}
}

func port(name string, p, nodePort int32, proto corev1.Protocol) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: p, NodePort: nodePort, Protocol: proto}
}

type ep struct {
	ip    string
	ready bool
}

func slice(ns, svcName, name string, ports map[string]int32, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svcName}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for n, p := range ports {
		tcp := corev1.ProtocolTCP
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: &n, Port: &p, Protocol: &tcp})
	}
	for _, e := range eps {
		r := e.ready
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{e.ip}, Conditions: discoveryv1.EndpointConditions{Ready: &r}})
	}
	return s
}

func TestBuildGolden(t *testing.T) {
	t.Parallel()
	affinity := svc("default", "sticky", "ClusterIP", "10.96.0.30", port("", 80, 0, corev1.ProtocolTCP))
	affinity.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	timeout := int32(60)
	affinity.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &timeout}}
	v6 := func(s *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
		s.AddressType = discoveryv1.AddressTypeIPv6
		return s
	}
	dual := svc("default", "dual", "ClusterIP", "10.96.0.50", port("", 80, 0, corev1.ProtocolTCP))
	dual.Spec.ClusterIPs = []string{"10.96.0.50", "fd00:10:96::32"}
	sticky6 := svc("default", "sticky6", "NodePort", "fd00:10:96::a", port("http", 80, 30090, corev1.ProtocolTCP))
	sticky6.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	tests := []struct {
		name string
		in   Input
	}{
		{"empty", Input{}},
		{"clusterip", Input{
			Services:       []*corev1.Service{svc("default", "web", "ClusterIP", "10.96.0.10", port("", 80, 0, corev1.ProtocolTCP))},
			EndpointSlices: []*discoveryv1.EndpointSlice{slice("default", "web", "web-a", map[string]int32{"": 8080}, ep{"10.244.1.2", true}, ep{"10.244.2.2", true}, ep{"10.244.3.2", false})},
		}},
		{"nodeport", Input{
			Services:       []*corev1.Service{svc("default", "web", "NodePort", "10.96.0.11", port("http", 80, 30080, corev1.ProtocolTCP))},
			EndpointSlices: []*discoveryv1.EndpointSlice{slice("default", "web", "web-a", map[string]int32{"http": 8080}, ep{"10.244.1.2", true})},
		}},
		{"affinity", Input{
			Services:       []*corev1.Service{affinity},
			EndpointSlices: []*discoveryv1.EndpointSlice{slice("default", "sticky", "sticky-a", map[string]int32{"": 8080}, ep{"10.244.1.2", true}, ep{"10.244.2.2", true})},
		}},
		{"no-endpoints", Input{
			Services: []*corev1.Service{
				svc("default", "empty", "NodePort", "10.96.0.12", port("", 80, 30081, corev1.ProtocolTCP)),
				svc("default", "unready", "ClusterIP", "10.96.0.13", port("", 53, 0, corev1.ProtocolUDP)),
			},
			EndpointSlices: []*discoveryv1.EndpointSlice{slice("default", "unready", "unready-a", map[string]int32{"": 53}, ep{"10.244.1.2", false})},
		}},
		{"multi-port", Input{
			Services: []*corev1.Service{svc("shop", "api", "ClusterIP", "10.96.0.20",
				port("http", 80, 0, corev1.ProtocolTCP), port("https", 443, 0, corev1.ProtocolTCP), port("metrics", 9090, 0, corev1.ProtocolTCP))},
			EndpointSlices: []*discoveryv1.EndpointSlice{
				slice("shop", "api", "api-a", map[string]int32{"http": 8080, "https": 8443}, ep{"10.244.1.5", true}),
				slice("shop", "api", "api-b", map[string]int32{"http": 8080, "https": 8443}, ep{"10.244.2.5", true}, ep{"10.244.1.5", true}),
			},
		}},
		{"ipv6", Input{
			Family:   IPv6,
			Services: []*corev1.Service{dual, sticky6, svc("default", "v4only", "ClusterIP", "10.96.0.51", port("", 80, 0, corev1.ProtocolTCP))},
			EndpointSlices: []*discoveryv1.EndpointSlice{
				v6(slice("default", "dual", "dual-v6", map[string]int32{"": 8080}, ep{"fd00:10:244:1::2", true}, ep{"fd00:10:244:2::2", true})),
				slice("default", "dual", "dual-v4", map[string]int32{"": 8080}, ep{"10.244.1.2", true}),
				v6(slice("default", "sticky6", "sticky6-a", map[string]int32{"http": 8080}, ep{"fd00:10:244:1::3", true})),
			},
		}},
		{"skipped", Input{
			Services: []*corev1.Service{
				svc("default", "badip", "ClusterIP", "10.96.0.300", port("", 80, 0, corev1.ProtocolTCP)),
				svc("default", "headless", "ClusterIP", "None", port("", 80, 0, corev1.ProtocolTCP)),
				svc("default", "v6", "ClusterIP", "fd00::1", port("", 80, 0, corev1.ProtocolTCP)),
				svc("default", "badport", "ClusterIP", "10.96.0.40", port("", 80, 0, "ICMP")),
				{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ext"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}},
			},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rs := Build(tt.in)
			got := rs.Render()
			if len(rs.Skipped) > 0 {
				got += "# skipped:\n# " + strings.Join(rs.Skipped, "\n# ") + "\n"
			}
			file := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("reading the golden file (run with -update to create it): %v", err)
			}
			if got != string(want) {
				t.Errorf("ruleset differs from %s:\n--- got\n%s\n--- want\n%s", file, got, want)
			}
			if again := Build(tt.in).Render(); again != rs.Render() {
				t.Errorf("Build is not deterministic")
			}
		})
	}
}

// TestBuilderMatchesBuild checks that a Builder reusing its previous work
// gives what a fresh Build gives, through a sequence of changes.
func TestBuilderMatchesBuild(t *testing.T) {
	t.Parallel()
	web := svc("default", "web", "NodePort", "10.96.0.10", port("", 80, 30080, corev1.ProtocolTCP))
	db := svc("default", "db", "ClusterIP", "10.96.0.11", port("", 5432, 0, corev1.ProtocolTCP))
	webSlice := slice("default", "web", "web-a", map[string]int32{"": 8080}, ep{"10.244.1.2", true})
	dbSlice := slice("default", "db", "db-a", map[string]int32{"": 5432}, ep{"10.244.1.3", true})
	webSlice2 := slice("default", "web", "web-a", map[string]int32{"": 8080}, ep{"10.244.1.2", true}, ep{"10.244.2.2", true})
	// The same address behind two Services: it stays in the hairpin set
	// until neither has it.
	dbShared := slice("default", "db", "db-a", map[string]int32{"": 5432}, ep{"10.244.1.2", true})
	db2 := db.DeepCopy()
	db2.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	steps := []Input{
		{Services: []*corev1.Service{web, db}, EndpointSlices: []*discoveryv1.EndpointSlice{webSlice, dbSlice}},
		{Services: []*corev1.Service{web, db}, EndpointSlices: []*discoveryv1.EndpointSlice{webSlice2, dbSlice}},
		{Services: []*corev1.Service{db2, web}, EndpointSlices: []*discoveryv1.EndpointSlice{dbSlice, webSlice2}},
		{Services: []*corev1.Service{db2}, EndpointSlices: []*discoveryv1.EndpointSlice{webSlice2}},
		{Services: []*corev1.Service{db2, web}, EndpointSlices: []*discoveryv1.EndpointSlice{dbSlice, webSlice}},
		{Services: []*corev1.Service{db2, web}, EndpointSlices: []*discoveryv1.EndpointSlice{dbShared, webSlice}},
		{Services: []*corev1.Service{db2}, EndpointSlices: []*discoveryv1.EndpointSlice{dbShared}},
		{Services: []*corev1.Service{db2}, EndpointSlices: []*discoveryv1.EndpointSlice{dbSlice}},
		{Services: []*corev1.Service{web, web}, EndpointSlices: []*discoveryv1.EndpointSlice{webSlice2}},
	}
	var b Builder
	for i, in := range steps {
		got, want := b.Build(in).Render(), Build(in).Render()
		if i == 6 && !strings.Contains(got, "10.244.1.2 . 10.244.1.2") {
			t.Errorf("step %d: the hairpin set lost an address a Service still has:\n%s", i, got)
		}
		if got != want {
			t.Errorf("step %d: Builder gives\n%s\nBuild gives\n%s", i, got, want)
		}
	}
}

package dns

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func svc(ns, name string, clusterIPs []string, ports ...corev1.ServicePort) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIPs: clusterIPs, Ports: ports}}
	if len(clusterIPs) > 0 {
		s.Spec.ClusterIP = clusterIPs[0]
	}
	return s
}

type ep struct {
	addr, host string
	ready      bool
}

func epSlice(ns, name, service string, ports []discoveryv1.EndpointPort, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4, Ports: ports}
	for _, e := range eps {
		d := discoveryv1.Endpoint{Addresses: []string{e.addr}, Conditions: discoveryv1.EndpointConditions{Ready: new(e.ready)}}
		if e.host != "" {
			d.Hostname = new(e.host)
		}
		s.Endpoints = append(s.Endpoints, d)
	}
	return s
}

func epPort(name string, p int32, proto corev1.Protocol) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{Name: new(name), Port: new(p), Protocol: new(proto)}
}

// testIndex holds a ClusterIP Service web (ports http/TCP 8080, dns/UDP
// 53), a headless Service db with two ready endpoints (one with a
// hostname) and one not ready, a dual-stack Service, and an ExternalName
// Service.
func testIndex() *Index {
	ix := NewIndex("", 0)
	ix.SetService(svc("default", "web", []string{"10.96.0.20"},
		corev1.ServicePort{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP},
		corev1.ServicePort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
		corev1.ServicePort{Port: 9999}))
	ix.SetEndpointSlice(epSlice("default", "web-abc", "web", []discoveryv1.EndpointPort{epPort("http", 8080, corev1.ProtocolTCP)},
		ep{"10.244.0.7", "", true}))
	ix.SetService(svc("prod", "db", []string{corev1.ClusterIPNone}))
	ix.SetEndpointSlice(epSlice("prod", "db-1", "db", []discoveryv1.EndpointPort{epPort("pg", 5432, corev1.ProtocolTCP)},
		ep{"10.244.0.11", "db-0", true}, ep{"10.244.0.12", "", true}, ep{"10.244.0.13", "db-2", false}))
	ix.SetService(svc("default", "dual", []string{"10.96.0.30", "fd00::30"}))
	ext := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ext"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.org"}}
	ix.SetService(ext)
	return ix
}

// texts writes records as "TYPE value" strings.
func texts(rrs []mdns.RR) []string {
	var out []string
	for _, rr := range rrs {
		f := strings.Fields(rr.String())
		out = append(out, f[3]+" "+strings.Join(f[4:], " "))
	}
	return out
}

func TestIndexLookup(t *testing.T) {
	ix := testIndex()
	const nx, ok = mdns.RcodeNameError, mdns.RcodeSuccess
	tests := []struct {
		name   string
		qname  string
		qtype  uint16
		fwd    bool
		rcode  int
		answer []string
		extra  []string
	}{
		{"cluster IP", "web.default.svc.cluster.local.", mdns.TypeA, false, ok, []string{"A 10.96.0.20"}, nil},
		{"any case, no trailing dot", "WEB.Default.svc.cluster.local", mdns.TypeA, false, ok, []string{"A 10.96.0.20"}, nil},
		{"AAAA of an IPv4 service is NODATA", "web.default.svc.cluster.local.", mdns.TypeAAAA, false, ok, nil, nil},
		{"dual stack A", "dual.default.svc.cluster.local.", mdns.TypeA, false, ok, []string{"A 10.96.0.30"}, nil},
		{"dual stack AAAA", "dual.default.svc.cluster.local.", mdns.TypeAAAA, false, ok, []string{"AAAA fd00::30"}, nil},
		{"unknown service", "nope.default.svc.cluster.local.", mdns.TypeA, false, nx, nil, nil},
		{"namespace with services", "default.svc.cluster.local.", mdns.TypeA, false, ok, nil, nil},
		{"namespace without services", "empty.svc.cluster.local.", mdns.TypeA, false, nx, nil, nil},
		{"zone apex SOA", "cluster.local.", mdns.TypeSOA, false, ok, []string{"SOA ns.dns.cluster.local. hostmaster.cluster.local."}, nil},
		{"headless: ready endpoints", "db.prod.svc.cluster.local.", mdns.TypeA, false, ok, []string{"A 10.244.0.11", "A 10.244.0.12"}, nil},
		{"headless hostname", "db-0.db.prod.svc.cluster.local.", mdns.TypeA, false, ok, []string{"A 10.244.0.11"}, nil},
		{"headless dashed address", "10-244-0-12.db.prod.svc.cluster.local.", mdns.TypeA, false, ok, []string{"A 10.244.0.12"}, nil},
		{"not-ready hostname", "db-2.db.prod.svc.cluster.local.", mdns.TypeA, false, nx, nil, nil},
		{"hostname under a ClusterIP service", "x.web.default.svc.cluster.local.", mdns.TypeA, false, nx, nil, nil},
		{"SRV cluster IP", "_http._tcp.web.default.svc.cluster.local.", mdns.TypeSRV, false, ok,
			[]string{"SRV 0 100 8080 web.default.svc.cluster.local."}, []string{"A 10.96.0.20"}},
		{"SRV udp port", "_dns._udp.web.default.svc.cluster.local.", mdns.TypeSRV, false, ok,
			[]string{"SRV 0 100 53 web.default.svc.cluster.local."}, []string{"A 10.96.0.20"}},
		{"SRV wrong protocol", "_http._udp.web.default.svc.cluster.local.", mdns.TypeSRV, false, nx, nil, nil},
		{"SRV proto non-terminal", "_tcp.web.default.svc.cluster.local.", mdns.TypeSRV, false, ok, nil, nil},
		{"SRV headless", "_pg._tcp.db.prod.svc.cluster.local.", mdns.TypeSRV, false, ok,
			[]string{"SRV 0 100 5432 db-0.db.prod.svc.cluster.local.", "SRV 0 100 5432 10-244-0-12.db.prod.svc.cluster.local."},
			[]string{"A 10.244.0.11", "A 10.244.0.12"}},
		{"ExternalName", "ext.default.svc.cluster.local.", mdns.TypeA, false, ok, []string{"CNAME example.org."}, nil},
		{"pod record", "10-244-0-99.default.pod.cluster.local.", mdns.TypeA, false, ok, []string{"A 10.244.0.99"}, nil},
		{"pod record, not an address", "foo.default.pod.cluster.local.", mdns.TypeA, false, nx, nil, nil},
		{"other name in the zone", "foo.cluster.local.", mdns.TypeA, false, nx, nil, nil},
		{"PTR cluster IP", "20.0.96.10.in-addr.arpa.", mdns.TypePTR, false, ok, []string{"PTR web.default.svc.cluster.local."}, nil},
		{"PTR endpoint with hostname", "11.0.244.10.in-addr.arpa.", mdns.TypePTR, false, ok, []string{"PTR db-0.db.prod.svc.cluster.local."}, nil},
		{"PTR endpoint without hostname", "7.0.244.10.in-addr.arpa.", mdns.TypePTR, false, ok, []string{"PTR 10-244-0-7.web.default.svc.cluster.local."}, nil},
		{"PTR IPv6 cluster IP", "0.3.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.", mdns.TypePTR, false, ok,
			[]string{"PTR dual.default.svc.cluster.local."}, nil},
		{"PTR of a not-ready endpoint is forwarded", "13.0.244.10.in-addr.arpa.", mdns.TypePTR, true, 0, nil, nil},
		{"PTR unknown address is forwarded", "1.1.1.10.in-addr.arpa.", mdns.TypePTR, true, 0, nil, nil},
		{"outside name is forwarded", "example.org.", mdns.TypeA, true, 0, nil, nil},
		{"look-alike suffix is forwarded", "svc.notcluster.local.", mdns.TypeA, true, 0, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ix.Lookup(tt.qname, tt.qtype)
			if r.Forward != tt.fwd {
				t.Fatalf("Forward = %v, want %v", r.Forward, tt.fwd)
			}
			if tt.fwd {
				return
			}
			if r.Rcode != tt.rcode {
				t.Errorf("Rcode = %d, want %d", r.Rcode, tt.rcode)
			}
			got := texts(r.Answer)
			if tt.qtype == mdns.TypeSOA && len(got) == 1 {
				got[0] = strings.Join(strings.Fields(got[0])[:3], " ")
			}
			if !slices.Equal(got, tt.answer) {
				t.Errorf("answer = %q, want %q", got, tt.answer)
			}
			if g := texts(r.Extra); !slices.Equal(g, tt.extra) {
				t.Errorf("extra = %q, want %q", g, tt.extra)
			}
			if len(r.Answer) == 0 {
				if len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != mdns.TypeSOA {
					t.Errorf("negative answer without the SOA: %v", r.Ns)
				}
			}
			for _, rr := range r.Answer {
				if rr.Header().Ttl != DefaultTTL {
					t.Errorf("TTL %d, want %d", rr.Header().Ttl, DefaultTTL)
				}
			}
		})
	}
}

func TestIndexUpdates(t *testing.T) {
	ix := testIndex()
	lookupA := func(name string) []string { return texts(ix.Lookup(name, mdns.TypeA).Answer) }

	// An endpoint becomes ready, another goes.
	ix.SetEndpointSlice(epSlice("prod", "db-1", "db", nil, ep{"10.244.0.13", "db-2", true}))
	if got, want := lookupA("db.prod.svc.cluster.local."), []string{"A 10.244.0.13"}; !slices.Equal(got, want) {
		t.Errorf("after the update: %q, want %q", got, want)
	}
	if r := ix.Lookup("11.0.244.10.in-addr.arpa.", mdns.TypePTR); !r.Forward {
		t.Errorf("PTR of a removed endpoint still answered: %v", r.Answer)
	}
	// A second slice of the same Service adds to it.
	ix.SetEndpointSlice(epSlice("prod", "db-2", "db", nil, ep{"10.244.0.14", "", true}))
	if got, want := lookupA("db.prod.svc.cluster.local."), []string{"A 10.244.0.13", "A 10.244.0.14"}; !slices.Equal(got, want) {
		t.Errorf("two slices: %q, want %q", got, want)
	}
	ix.DeleteEndpointSlice("prod", "db-1")
	if got, want := lookupA("db.prod.svc.cluster.local."), []string{"A 10.244.0.14"}; !slices.Equal(got, want) {
		t.Errorf("after deleting a slice: %q, want %q", got, want)
	}
	// The ClusterIP changes; the old PTR goes.
	ix.SetService(svc("default", "web", []string{"10.96.0.21"}))
	if got, want := lookupA("web.default.svc.cluster.local."), []string{"A 10.96.0.21"}; !slices.Equal(got, want) {
		t.Errorf("new cluster IP: %q, want %q", got, want)
	}
	if r := ix.Lookup("20.0.96.10.in-addr.arpa.", mdns.TypePTR); !r.Forward {
		t.Errorf("old cluster IP's PTR still answered")
	}
	// Deleting the Service: NXDOMAIN, and the namespace empties.
	for _, n := range []string{"web", "dual", "ext"} {
		ix.DeleteService("default", n)
	}
	if r := ix.Lookup("web.default.svc.cluster.local.", mdns.TypeA); r.Rcode != mdns.RcodeNameError {
		t.Errorf("deleted service: rcode %d", r.Rcode)
	}
	if r := ix.Lookup("default.svc.cluster.local.", mdns.TypeA); r.Rcode != mdns.RcodeNameError {
		t.Errorf("emptied namespace: rcode %d", r.Rcode)
	}
	// Turning a Service into an ExternalName one.
	ix.SetService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "db"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}})
	if got, want := lookupA("db.prod.svc.cluster.local."), []string{"CNAME db.example.com."}; !slices.Equal(got, want) {
		t.Errorf("ExternalName: %q, want %q", got, want)
	}
}

func TestLookupKeepsTheCase(t *testing.T) {
	ix := testIndex()
	r := ix.Lookup("Web.Default.SVC.cluster.local.", mdns.TypeA)
	if len(r.Answer) != 1 || r.Answer[0].Header().Name != "Web.Default.SVC.cluster.local." {
		t.Errorf("answer %v", r.Answer)
	}
	r = ix.Lookup("20.0.96.10.IN-ADDR.ARPA.", mdns.TypePTR)
	if len(r.Answer) != 1 || r.Answer[0].Header().Name != "20.0.96.10.IN-ADDR.ARPA." {
		t.Errorf("PTR answer %v", r.Answer)
	}
}

func TestOtherZone(t *testing.T) {
	ix := NewIndex("kube.example.", 30)
	ix.SetService(svc("default", "web", []string{"10.96.0.20"}))
	r := ix.Lookup("web.default.svc.kube.example.", mdns.TypeA)
	if got := texts(r.Answer); !slices.Equal(got, []string{"A 10.96.0.20"}) || r.Answer[0].Header().Ttl != 30 {
		t.Errorf("answer %v", r.Answer)
	}
	if !ix.Lookup("web.default.svc.cluster.local.", mdns.TypeA).Forward {
		t.Errorf("cluster.local is not this index's zone")
	}
}

func TestDashed(t *testing.T) {
	for _, s := range []string{"10.1.2.3", "fd00::1", "2001:db8::a:b"} {
		a := netip.MustParseAddr(s)
		back, ok := undash(dashed(a))
		if !ok || back != a {
			t.Errorf("undash(dashed(%s)) = %s, %v", s, back, ok)
		}
	}
	if _, ok := undash("www"); ok {
		t.Errorf("undash(www) ok")
	}
}

package rules

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// gen turns fuzz bytes into Services and EndpointSlices drawn from small
// pools of names, addresses and ports, so that inputs collide (the same
// Service twice, one address behind two Services, two Services on one
// address and port) as real caches with bad input can.
type gen struct{ data []byte }

func (g *gen) next() byte {
	if len(g.data) == 0 {
		return 0
	}
	b := g.data[0]
	g.data = g.data[1:]
	return b
}

func (g *gen) pick(options ...string) string { return options[int(g.next())%len(options)] }

func ptr[T any](v T) *T { return &v }

var (
	fuzzNames     = []string{"a", "b", "web", "db"}
	fuzzNS        = []string{"default", "kube-system"}
	fuzzClusterIP = []string{"10.96.0.1", "10.96.0.2", "fd00::1", "None", "", "bogus", "0.0.0.0", "fe80::1%eth0", "10.96.0.1"}
	fuzzEndpoint  = []string{"10.244.0.1", "10.244.0.2", "10.244.1.1", "fd00:244::1", "fd00:244::2", "nope", "10.244.0.1"}
	fuzzPortName  = []string{"", "http", "dns"}
	fuzzProto     = []string{"", "TCP", "UDP", "SCTP", "ICMP"}
	fuzzType      = []string{"ClusterIP", "NodePort", "LoadBalancer", "ExternalName", ""}
)

func (g *gen) port() int32 {
	switch g.next() % 4 {
	case 0:
		return 80
	case 1:
		return 53
	case 2:
		return int32(g.next())<<8 | int32(g.next()) // 0..65535
	default:
		return -int32(g.next()) * 1000 // zero, negative or far out of range
	}
}

func (g *gen) service() *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: g.pick(fuzzNS...), Name: g.pick(fuzzNames...)}}
	s.Spec.Type = corev1.ServiceType(g.pick(fuzzType...))
	s.Spec.ClusterIP = g.pick(fuzzClusterIP...)
	if g.next()%2 == 0 {
		s.Spec.ClusterIPs = []string{s.Spec.ClusterIP, g.pick(fuzzClusterIP...)}
	}
	if g.next()%3 == 0 {
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		if t := int32(g.next()) - 10; t != 0 {
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &t}}
		}
	}
	if g.next()%8 == 0 {
		s.Labels = map[string]string{"service.kubernetes.io/service-proxy-name": "other"}
	}
	for range g.next() % 4 {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: g.pick(fuzzPortName...), Protocol: corev1.Protocol(g.pick(fuzzProto...)),
			Port: g.port(), NodePort: g.port()})
	}
	return s
}

func (g *gen) slice(i int) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: g.pick(fuzzNS...), Name: fmt.Sprintf("s%d", int(g.next())%(i+1)),
		Labels: map[string]string{discoveryv1.LabelServiceName: g.pick(append([]string{""}, fuzzNames...)...)}}}
	s.AddressType = discoveryv1.AddressType(g.pick(string(discoveryv1.AddressTypeIPv4), string(discoveryv1.AddressTypeIPv6), "FQDN"))
	for range g.next() % 3 {
		p := discoveryv1.EndpointPort{Name: ptr(g.pick(fuzzPortName...)), Port: ptr(g.port())}
		if proto := corev1.Protocol(g.pick(fuzzProto...)); proto != "" {
			p.Protocol = &proto
		}
		s.Ports = append(s.Ports, p)
	}
	for range g.next() % 4 {
		e := discoveryv1.Endpoint{Addresses: []string{g.pick(fuzzEndpoint...)}}
		switch g.next() % 4 {
		case 0:
			e.Conditions.Ready = ptr(false)
		case 1:
			e.Conditions.Terminating = ptr(true)
		case 2:
			e.Conditions.Ready = ptr(true)
		}
		s.Endpoints = append(s.Endpoints, e)
	}
	return s
}

func (g *gen) input() Input {
	in := Input{Family: IPv4}
	if g.next()%2 == 1 {
		in.Family = IPv6
	}
	for range g.next() % 6 {
		in.Services = append(in.Services, g.service())
	}
	for i := range int(g.next() % 6) {
		in.EndpointSlices = append(in.EndpointSlices, g.slice(i))
	}
	return in
}

// deepCopy copies every object: equal input, other pointers.
func deepCopy(in Input) Input {
	out := Input{Family: in.Family}
	for _, s := range in.Services {
		out.Services = append(out.Services, s.DeepCopy())
	}
	for _, s := range in.EndpointSlices {
		out.EndpointSlices = append(out.EndpointSlices, s.DeepCopy())
	}
	return out
}

// checkRuleset asserts what holds of every ruleset: unique chain and set
// names, every verdict and rule naming a chain or set that exists, map
// elements sorted with unique keys and of the table's family, and the
// hairpin addresses sorted, unique and of the family.
func checkRuleset(t *testing.T, rs *Ruleset) {
	t.Helper()
	chains, sets := map[string]bool{}, map[string]bool{}
	for _, c := range rs.Chains {
		if c.Name == "" || chains[c.Name] {
			t.Fatalf("chain name %q empty or repeated", c.Name)
		}
		chains[c.Name] = true
	}
	for _, s := range rs.Sets {
		if sets[s.Name] || s.Timeout <= 0 {
			t.Fatalf("set %q repeated or without a timeout", s.Name)
		}
		sets[s.Name] = true
	}
	for _, c := range rs.Chains {
		for _, r := range c.Rules {
			var target, set string
			switch r := r.(type) {
			case Jump:
				target = r.Chain
			case Goto:
				target = r.Chain
			case CTNewJump:
				target = r.Chain
			case PickEndpoint:
				set = r.Affinity
				if !rs.Family.Is(r.Addr) || r.Port == 0 {
					t.Fatalf("chain %s picks %s:%d", c.Name, r.Addr, r.Port)
				}
			case StickyEndpoint:
				set = r.Set
			}
			if target != "" && !chains[target] {
				t.Fatalf("chain %s: %s names no chain", c.Name, r)
			}
			if set != "" && !sets[set] {
				t.Fatalf("chain %s: %s names no set", c.Name, r)
			}
		}
	}
	for _, m := range rs.Maps {
		for i, e := range m.Elements {
			if !chains[e.Goto] {
				t.Fatalf("map %s: element %+v goes to no chain", m.Name, e)
			}
			if (m.Key == KeyAddrProtoPort) != e.Addr.IsValid() || (e.Addr.IsValid() && !rs.Family.Is(e.Addr)) || e.Port == 0 {
				t.Fatalf("map %s: bad key %+v", m.Name, e)
			}
			if i > 0 {
				p := m.Elements[i-1]
				if c := p.Addr.Compare(e.Addr); c > 0 || c == 0 && (p.Proto > e.Proto || p.Proto == e.Proto && p.Port >= e.Port) {
					t.Fatalf("map %s: %+v then %+v", m.Name, p, e)
				}
			}
		}
	}
	if !slices.IsSortedFunc(rs.Hairpin, netip.Addr.Compare) || len(slices.Compact(slices.Clone(rs.Hairpin))) != len(rs.Hairpin) {
		t.Fatalf("hairpin addresses not sorted and unique: %v", rs.Hairpin)
	}
	for _, a := range rs.Hairpin {
		if !rs.Family.Is(a) {
			t.Fatalf("hairpin address %s in the %s table", a, rs.Family)
		}
	}
	if r := rs.Render(); !strings.HasPrefix(r, "table ") || !strings.HasSuffix(r, "}\n") {
		t.Fatalf("render:\n%s", r)
	}
}

// FuzzBuild: Build never panics, its rulesets hold together, equal input
// gives the same ruleset, and a Builder that reuses its previous Build
// gives what a fresh Build gives.
func FuzzBuild(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 2})
	f.Add([]byte("two services on one address, affinity, node ports and slices"))
	f.Add([]byte{1, 5, 1, 2, 1, 2, 3, 0, 3, 1, 1, 1, 0, 9, 9, 9, 9, 9, 5, 4, 3, 2, 1, 0, 255, 254, 253})
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{data: data}
		first := g.input()
		rs := Build(first)
		checkRuleset(t, rs)
		if again := Build(deepCopy(first)).Render(); again != rs.Render() {
			t.Fatalf("equal input, other ruleset:\n%s\n%s", rs.Render(), again)
		}
		// A second input that keeps some of the first's objects, as a
		// sync after a few changes does.
		second := g.input()
		second.Family = first.Family
		for _, s := range first.Services {
			if g.next()%2 == 0 {
				second.Services = append(second.Services, s)
			}
		}
		for _, s := range first.EndpointSlices {
			if g.next()%2 == 0 {
				second.EndpointSlices = append(second.EndpointSlices, s)
			}
		}
		var b Builder
		b.Build(first)
		got := b.Build(second)
		checkRuleset(t, got)
		if want := Build(second).Render(); got.Render() != want {
			t.Fatalf("the Builder's second build differs from a fresh one:\n%s\nfresh:\n%s", got.Render(), want)
		}
	})
}

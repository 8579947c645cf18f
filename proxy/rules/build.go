package rules

import (
	"cmp"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Names of the fixed chains and maps.
const (
	ChainServices       = "services"
	ChainEndpointsCheck = "endpoints-check"
	ChainReject         = "reject-chain"

	MapServiceIPs          = "service-ips"
	MapServiceNodePorts    = "service-nodeports"
	MapNoEndpointServices  = "no-endpoint-services"
	MapNoEndpointNodePorts = "no-endpoint-nodeports"
)

// DefaultAffinityTimeout is sessionAffinity ClientIP's timeout when the
// Service does not set one (upstream's 3 hours).
const DefaultAffinityTimeout = 10800 * time.Second

// Input is what the ruleset is built from. The objects are only read.
type Input struct {
	// Family is the table's: only this family's cluster IPs, EndpointSlices
	// and addresses are programmed (the zero value is IPv4).
	Family         Family
	Services       []*corev1.Service
	EndpointSlices []*discoveryv1.EndpointSlice
}

type endpoint struct {
	addr netip.Addr
	port uint16
}

// Build computes the desired ruleset. It is a pure function of its input:
// the same input gives the same ruleset, in the same order. Services it
// cannot program (headless, ExternalName, bad addresses or ports) are
// skipped and named in Ruleset.Skipped; a Service with no cluster IP of the
// input's family belongs to the other family's table and is left out.
func Build(in Input) *Ruleset {
	return new(Builder).Build(in)
}

// Builder builds rulesets as Build does, reusing the rules of each Service
// whose Service and EndpointSlice objects are the same pointers as at its
// previous Build: informer caches replace objects, never modify them, so
// a sync after one change rebuilds one Service. Use one Builder per family.
// Not safe for concurrent use.
type Builder struct {
	family  Family
	memo    map[string]memoEntry
	hairpin refSet // the endpoint addresses of the parts in memo
}

// refSet counts addresses and keeps those counted at least once sorted,
// so that a Build after one change does not sort every endpoint again.
type refSet struct {
	count  map[netip.Addr]int
	sorted []netip.Addr // replaced, never modified: rulesets share it
}

// update adds the addresses of came and then removes those of gone.
func (r *refSet) update(came, gone [][]netip.Addr) {
	if r.count == nil {
		r.count = map[netip.Addr]int{}
	}
	var added, removed []netip.Addr
	for _, as := range came {
		for _, a := range as {
			if r.count[a]++; r.count[a] == 1 {
				added = append(added, a)
			}
		}
	}
	for _, as := range gone {
		for _, a := range as {
			if r.count[a]--; r.count[a] == 0 {
				delete(r.count, a)
				removed = append(removed, a)
			}
		}
	}
	if len(added) == 0 && len(removed) == 0 {
		return
	}
	slices.SortFunc(added, netip.Addr.Compare)
	slices.SortFunc(removed, netip.Addr.Compare)
	out := make([]netip.Addr, 0, len(r.sorted)+len(added)-len(removed))
	i, j := 0, 0
	for _, a := range r.sorted {
		if j < len(removed) && removed[j] == a {
			j++
			continue
		}
		for i < len(added) && added[i].Less(a) {
			out = append(out, added[i])
			i++
		}
		out = append(out, a)
	}
	r.sorted = append(out, added[i:]...)
}

type memoEntry struct {
	svc    *corev1.Service
	slices []*discoveryv1.EndpointSlice
	part   *servicePart
}

// servicePart is what one Service contributes to the ruleset.
type servicePart struct {
	chains                                []Chain
	sets                                  []Set
	svcIPs, nodePorts, noEpIPs, noEpPorts []Element
	hairpin                               []netip.Addr
	skipped                               []string
}

// Build computes the desired ruleset (see the function Build).
func (b *Builder) Build(in Input) *Ruleset {
	if b.memo != nil && b.family != in.Family {
		*b = Builder{} // another family: nothing to reuse
	}
	b.family = in.Family
	addrType := discoveryv1.AddressTypeIPv4
	if in.Family == IPv6 {
		addrType = discoveryv1.AddressTypeIPv6
	}
	slicesBySvc := make(map[string][]*discoveryv1.EndpointSlice, len(in.EndpointSlices))
	for _, s := range in.EndpointSlices {
		if s == nil || s.AddressType != addrType {
			continue
		}
		name := s.Labels[discoveryv1.LabelServiceName]
		if name == "" {
			continue
		}
		k := s.Namespace + "/" + name
		slicesBySvc[k] = append(slicesBySvc[k], s)
	}

	type item struct {
		id  string
		svc *corev1.Service
	}
	svcs := make([]item, 0, len(in.Services))
	for _, s := range in.Services {
		if s != nil {
			svcs = append(svcs, item{s.Namespace + "/" + s.Name, s})
		}
	}
	slices.SortFunc(svcs, func(a, b item) int { return strings.Compare(a.id, b.id) })

	memo := make(map[string]memoEntry, len(svcs))
	parts := make([]*servicePart, 0, len(svcs))
	var came, gone [][]netip.Addr
	base := baseChains(in.Family)
	nChains, nSets := len(base), 0
	var nIPs, nPorts, nNoIPs, nNoPorts int
	for _, it := range svcs {
		id, svc := it.id, it.svc
		if _, dup := memo[id]; dup {
			continue // the same Service twice in the input: keep the first
		}
		ss := slicesBySvc[id]
		slices.SortFunc(ss, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
		e, ok := b.memo[id]
		if !ok || e.svc != svc || !slices.Equal(e.slices, ss) {
			if ok {
				gone = append(gone, e.part.hairpin)
			}
			e = memoEntry{svc: svc, slices: ss, part: buildService(in.Family, svc, ss)}
			came = append(came, e.part.hairpin)
		}
		memo[id] = e
		p := e.part
		parts = append(parts, p)
		nChains += len(p.chains)
		nSets += len(p.sets)
		nIPs, nPorts, nNoIPs, nNoPorts = nIPs+len(p.svcIPs), nPorts+len(p.nodePorts), nNoIPs+len(p.noEpIPs), nNoPorts+len(p.noEpPorts)
	}
	for id, e := range b.memo {
		if _, ok := memo[id]; !ok {
			gone = append(gone, e.part.hairpin)
		}
	}
	b.memo = memo
	b.hairpin.update(came, gone)

	rs := &Ruleset{Family: in.Family, Chains: make([]Chain, 0, nChains), Sets: make([]Set, 0, nSets), Hairpin: b.hairpin.sorted}
	rs.Chains = append(rs.Chains, base...)
	svcIPs, nodePorts := make([]Element, 0, nIPs), make([]Element, 0, nPorts)
	noEpIPs, noEpPorts := make([]Element, 0, nNoIPs), make([]Element, 0, nNoPorts)
	for _, p := range parts {
		rs.Chains = append(rs.Chains, p.chains...)
		rs.Sets = append(rs.Sets, p.sets...)
		svcIPs, nodePorts = append(svcIPs, p.svcIPs...), append(nodePorts, p.nodePorts...)
		noEpIPs, noEpPorts = append(noEpIPs, p.noEpIPs...), append(noEpPorts, p.noEpPorts...)
		rs.Skipped = append(rs.Skipped, p.skipped...)
	}
	rs.Maps = []Map{
		{Name: MapNoEndpointNodePorts, Key: KeyProtoPort, Elements: sortElements(noEpPorts)},
		{Name: MapNoEndpointServices, Key: KeyAddrProtoPort, Elements: sortElements(noEpIPs)},
		{Name: MapServiceIPs, Key: KeyAddrProtoPort, Elements: sortElements(svcIPs)},
		{Name: MapServiceNodePorts, Key: KeyProtoPort, Elements: sortElements(nodePorts)},
	}
	return rs
}

// buildService computes one Service's chains, sets and map elements.
func buildService(family Family, svc *corev1.Service, ss []*discoveryv1.EndpointSlice) *servicePart {
	p := &servicePart{}
	id := svc.Namespace + "/" + svc.Name
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Labels["service.kubernetes.io/service-proxy-name"] != "" {
		return p
	}
	ip, ok, any := clusterIP(family, svc)
	if !ok {
		// Reported once, by the IPv4 table's build.
		if !any && family == IPv4 && svc.Spec.ClusterIP != corev1.ClusterIPNone && svc.Spec.ClusterIP != "" {
			p.skipped = append(p.skipped, fmt.Sprintf("service %s: no usable cluster IP in %q", id, svc.Spec.ClusterIP))
		}
		return p
	}
	var affinity time.Duration
	if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		affinity = DefaultAffinityTimeout
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil && *c.ClientIP.TimeoutSeconds > 0 {
			affinity = time.Duration(*c.ClientIP.TimeoutSeconds) * time.Second
		}
	}
	seen := map[string]bool{}
	for _, sp := range svc.Spec.Ports {
		proto, ok := protocol(sp.Protocol)
		if !ok || sp.Port <= 0 || sp.Port > 65535 {
			p.skipped = append(p.skipped, fmt.Sprintf("service %s port %q: unsupported protocol %q or port %d", id, sp.Name, sp.Protocol, sp.Port))
			continue
		}
		spn := id + "/" + proto.String() + "/" + portName(sp)
		if seen[spn] {
			// Validation refuses two ports of one name; a Service that
			// slipped past it must not give two chains one name, which
			// would make nft refuse the whole ruleset.
			p.skipped = append(p.skipped, fmt.Sprintf("service %s port %q: a second %s port of this name", id, sp.Name, proto))
			continue
		}
		seen[spn] = true
		eps := readyEndpoints(family, ss, sp)
		nodePort := sp.NodePort > 0 && sp.NodePort <= 65535 && svc.Spec.Type != corev1.ServiceTypeClusterIP
		if len(eps) == 0 {
			p.noEpIPs = append(p.noEpIPs, Element{Addr: ip, Proto: proto, Port: uint16(sp.Port), Goto: ChainReject})
			if nodePort {
				p.noEpPorts = append(p.noEpPorts, Element{Proto: proto, Port: uint16(sp.NodePort), Goto: ChainReject})
			}
			continue
		}
		h := hash(spn)
		svcChain := Chain{Name: "service-" + h + "-" + spn}
		sets := make([]string, len(eps))
		if affinity > 0 {
			for i, ep := range eps {
				// nft names cannot hold ':', so IPv6 addresses are written with '.'.
				sets[i] = "affinity-" + h + "-" + spn + "__" + strings.ReplaceAll(ep.addr.String(), ":", ".") + "/" + strconv.Itoa(int(ep.port))
				p.sets = append(p.sets, Set{Name: sets[i], Timeout: affinity})
				svcChain.Rules = append(svcChain.Rules, StickyEndpoint{Set: sets[i], Proto: proto, Addr: ep.addr, Port: ep.port})
			}
		}
		for i, ep := range eps {
			mod := uint32(len(eps) - i) // 1 for the last: it takes what is left
			if mod == 1 {
				mod = 0
			}
			svcChain.Rules = append(svcChain.Rules, PickEndpoint{Mod: mod, Affinity: sets[i], Proto: proto, Addr: ep.addr, Port: ep.port})
			p.hairpin = append(p.hairpin, ep.addr)
		}
		p.chains = append(p.chains, svcChain)
		p.svcIPs = append(p.svcIPs, Element{Addr: ip, Proto: proto, Port: uint16(sp.Port), Goto: svcChain.Name})
		if nodePort {
			ext := Chain{Name: "external-" + h + "-" + spn, Rules: []Rule{MarkMasquerade{}, Goto{Chain: svcChain.Name}}}
			p.chains = append(p.chains, ext)
			p.nodePorts = append(p.nodePorts, Element{Proto: proto, Port: uint16(sp.NodePort), Goto: ext.Name})
		}
	}
	return p
}

// baseChains are the hooks and the fixed regular chains.
func baseChains(f Family) []Chain {
	return []Chain{
		{Name: "nat-prerouting", Hook: &Hook{Type: "nat", Hook: "prerouting", Priority: -100}, Rules: []Rule{Jump{Chain: ChainServices}}},
		{Name: "nat-output", Hook: &Hook{Type: "nat", Hook: "output", Priority: -100}, Rules: []Rule{Jump{Chain: ChainServices}}},
		{Name: "nat-postrouting", Hook: &Hook{Type: "nat", Hook: "postrouting", Priority: 100}, Rules: []Rule{MasqueradeMarked{}, MasqueradeHairpin{Set: SetHairpin, Family: f}}},
		{Name: "filter-input", Hook: &Hook{Type: "filter", Hook: "input", Priority: -10}, Rules: []Rule{CTNewJump{Chain: ChainEndpointsCheck}}},
		{Name: "filter-forward", Hook: &Hook{Type: "filter", Hook: "forward", Priority: -10}, Rules: []Rule{CTNewJump{Chain: ChainEndpointsCheck}}},
		{Name: "filter-output", Hook: &Hook{Type: "filter", Hook: "output", Priority: -10}, Rules: []Rule{CTNewJump{Chain: ChainEndpointsCheck}}},
		{Name: ChainEndpointsCheck, Rules: []Rule{DispatchAddrPort{Map: MapNoEndpointServices, Family: f}, DispatchLocalPort{Map: MapNoEndpointNodePorts}}},
		{Name: ChainReject, Rules: []Rule{Reject{}}},
		{Name: ChainServices, Rules: []Rule{DispatchAddrPort{Map: MapServiceIPs, Family: f}, DispatchLocalPort{Map: MapServiceNodePorts}}},
	}
}

// clusterIP returns the Service's cluster IP of the family; any says
// whether it has a usable cluster IP of some family at all.
func clusterIP(f Family, svc *corev1.Service) (ip netip.Addr, ok, any bool) {
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 {
		ips = []string{svc.Spec.ClusterIP}
	}
	for _, s := range ips {
		a, err := netip.ParseAddr(s)
		if err != nil || a.IsUnspecified() || a.Zone() != "" {
			continue
		}
		any = true
		if f.Is(a) {
			return a, true, true
		}
	}
	return netip.Addr{}, false, any
}

func protocol(p corev1.Protocol) (Proto, bool) {
	switch p {
	case corev1.ProtocolTCP, "":
		return TCP, true
	case corev1.ProtocolUDP:
		return UDP, true
	case corev1.ProtocolSCTP:
		return SCTP, true
	}
	return 0, false
}

func portName(sp corev1.ServicePort) string {
	if sp.Name != "" {
		return sp.Name
	}
	return "p" + strconv.Itoa(int(sp.Port))
}

// readyEndpoints returns the ready, not terminating endpoints serving sp
// with addresses of the family, deduplicated and sorted.
func readyEndpoints(f Family, ss []*discoveryv1.EndpointSlice, sp corev1.ServicePort) []endpoint {
	want := sp.Protocol
	if want == "" {
		want = corev1.ProtocolTCP
	}
	var out []endpoint
	for _, s := range ss {
		var port int32
		for _, p := range s.Ports {
			proto := corev1.ProtocolTCP
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			if name == sp.Name && proto == want && p.Port != nil {
				port = *p.Port
				break
			}
		}
		if port <= 0 || port > 65535 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			if e.Conditions.Terminating != nil && *e.Conditions.Terminating {
				continue
			}
			for _, a := range e.Addresses {
				if ip, err := netip.ParseAddr(a); err == nil && f.Is(ip) && ip.Zone() == "" {
					out = append(out, endpoint{addr: ip, port: uint16(port)})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b endpoint) int {
		return cmp.Or(a.addr.Compare(b.addr), cmp.Compare(a.port, b.port))
	})
	return slices.Compact(out)
}

func sortElements(es []Element) []Element {
	slices.SortFunc(es, func(a, b Element) int {
		return cmp.Or(a.Addr.Compare(b.Addr), cmp.Compare(a.Proto, b.Proto), cmp.Compare(a.Port, b.Port))
	})
	// Two Services with the same address and port (bad input): keep the first.
	return slices.CompactFunc(es, func(a, b Element) bool { return a.Addr == b.Addr && a.Proto == b.Proto && a.Port == b.Port })
}

// hash is upstream's short chain-name prefix: it keeps names unique even
// where the readable part is cut or ambiguous.
func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base32.StdEncoding.EncodeToString(sum[:])[:8]
}

// Package rules is the proxy's pure core: it turns Services, EndpointSlices
// and the node's settings into the desired nftables ruleset of the proxy's
// own table, as a data structure. It does no I/O; proxy/nft writes the
// result to the kernel and the golden tests read its text form (Render).
package rules

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Table is the name of the proxy's table, in the ip family for IPv4 and in
// the ip6 family for IPv6.
const Table = "kubebus"

// Family is an IP family; the proxy keeps one table per family.
type Family uint8

// The families.
const (
	IPv4 Family = iota
	IPv6
)

// String is the family's nft name: "ip" or "ip6".
func (f Family) String() string {
	if f == IPv6 {
		return "ip6"
	}
	return "ip"
}

// Is reports whether a is an address of the family.
func (f Family) Is(a netip.Addr) bool {
	if f == IPv6 {
		return a.Is6() && !a.Is4In6()
	}
	return a.Is4()
}

func (f Family) addrType() string {
	if f == IPv6 {
		return "ipv6_addr"
	}
	return "ipv4_addr"
}

func familyOf(a netip.Addr) Family {
	if a.Is6() {
		return IPv6
	}
	return IPv4
}

// addrPort renders a DNAT target: a:p, or [a]:p for IPv6.
func addrPort(a netip.Addr, p uint16) string {
	return netip.AddrPortFrom(a, p).String()
}

// SetHairpin is the set of (address . address) pairs, one per endpoint
// address, that MasqueradeHairpin looks packets up in.
const SetHairpin = "hairpin"

// MasqueradeMark is the packet mark bit that asks postrouting to masquerade.
const MasqueradeMark = 0x4000

// Ruleset is the whole desired content of the proxy's table of one family.
type Ruleset struct {
	Family Family
	// Chains in a stable order: the fixed chains first, then each Service's
	// (Services by "namespace/name").
	Chains []Chain
	// Sets are the sessionAffinity sets of client addresses, in the order
	// of their Services.
	Sets []Set
	// Maps are the verdict maps, by name.
	Maps []Map
	// Hairpin is every endpoint address, sorted: the elements (a . a) of
	// the set SetHairpin.
	Hairpin []netip.Addr
	// Skipped says which inputs were ignored and why (bad or unsupported).
	Skipped []string
}

// Hook makes a chain a base chain.
type Hook struct {
	Type     string // "nat" or "filter"
	Hook     string // "prerouting", "input", "forward", "output", "postrouting"
	Priority int32
}

// Chain is a chain and its rules.
type Chain struct {
	Name  string
	Hook  *Hook // nil for a regular chain
	Rules []Rule
}

// Set is a dynamic set of source addresses whose elements expire.
type Set struct {
	Name    string
	Timeout time.Duration
}

// KeyKind says what a map's keys are made of.
type KeyKind int

const (
	// KeyAddrProtoPort: address (of the table's family) . inet_proto . inet_service.
	KeyAddrProtoPort KeyKind = iota
	// KeyProtoPort: inet_proto . inet_service.
	KeyProtoPort
)

// Map is a verdict map.
type Map struct {
	Name     string
	Key      KeyKind
	Elements []Element // sorted by key
}

// Element is one key of a verdict map and the chain it goes to.
type Element struct {
	Addr  netip.Addr // unset for KeyProtoPort
	Proto Proto
	Port  uint16
	Goto  string
}

// Proto is an IP protocol number.
type Proto uint8

// The protocols a Service port can use.
const (
	TCP  Proto = 6
	UDP  Proto = 17
	SCTP Proto = 132
)

func (p Proto) String() string {
	switch p {
	case TCP:
		return "tcp"
	case UDP:
		return "udp"
	case SCTP:
		return "sctp"
	}
	return fmt.Sprint(uint8(p))
}

// Rule is one rule; the set of kinds is closed (the applier encodes each).
type Rule interface {
	// String is the rule in nft syntax.
	String() string
	isRule()
}

// Jump: jump to Chain.
type Jump struct{ Chain string }

// Goto: goto Chain.
type Goto struct{ Chain string }

// CTNewJump: ct state new jump Chain.
type CTNewJump struct{ Chain string }

// DispatchAddrPort: ip daddr . meta l4proto . th dport vmap @Map (ip6
// daddr in the IPv6 table).
type DispatchAddrPort struct {
	Map    string
	Family Family
}

// DispatchLocalPort: fib daddr type local meta l4proto . th dport vmap @Map.
type DispatchLocalPort struct{ Map string }

// MasqueradeMarked: masquerade the packets carrying MasqueradeMark.
type MasqueradeMarked struct{}

// Reject: reject (ICMP port unreachable).
type Reject struct{}

// MarkMasquerade: set MasqueradeMark on the packet.
type MarkMasquerade struct{}

// PickEndpoint: DNAT to one endpoint, as one rule of a service chain (no
// chain per endpoint: a change of endpoints rewrites one chain, and the
// kernel's validation of the table after each change has fewer chains to
// walk). With Mod > 0 the rule matches when numgen random mod Mod == 0: a
// service chain picks one of N endpoints with N-1 of these (Mod N, N-1,
// ..., 2) and one with Mod 0, which gives each endpoint the same chance.
// (Upstream uses one anonymous verdict map per Service instead; the kernel
// looks sets up linearly, so 10,000 of them in one transaction take
// minutes, see docs/architecture.md.) With Affinity set, the client's
// address is added to (or refreshed in) that set of the endpoint.
type PickEndpoint struct {
	Mod      uint32
	Affinity string
	Proto    Proto
	Addr     netip.Addr
	Port     uint16
}

// StickyEndpoint: DNAT to the endpoint when the client's address is in its
// affinity Set (and refresh it there); rules of these come before the
// random pick in the chain of a Service with sessionAffinity ClientIP.
type StickyEndpoint struct {
	Set   string
	Proto Proto
	Addr  netip.Addr
	Port  uint16
}

// MasqueradeHairpin: masquerade packets whose source and destination are
// the same address of the set: a pod that reached itself through its
// Service would otherwise get the reply from its own address, not the
// Service's.
type MasqueradeHairpin struct {
	Set    string
	Family Family
}

func (r Jump) String() string      { return "jump " + r.Chain }
func (r Goto) String() string      { return "goto " + r.Chain }
func (r CTNewJump) String() string { return "ct state new jump " + r.Chain }
func (r DispatchAddrPort) String() string {
	return r.Family.String() + " daddr . meta l4proto . th dport vmap @" + r.Map
}
func (r DispatchLocalPort) String() string {
	return "fib daddr type local meta l4proto . th dport vmap @" + r.Map
}
func (MasqueradeMarked) String() string {
	return fmt.Sprintf("meta mark & %#x == %#x masquerade", MasqueradeMark, MasqueradeMark)
}
func (Reject) String() string { return "reject" }
func (MarkMasquerade) String() string {
	return fmt.Sprintf("meta mark set meta mark | %#x", MasqueradeMark)
}
func (r PickEndpoint) String() string {
	var b strings.Builder
	if r.Mod > 0 {
		fmt.Fprintf(&b, "numgen random mod %d == 0 ", r.Mod)
	}
	fmt.Fprintf(&b, "meta l4proto %s ", r.Proto)
	if r.Affinity != "" {
		b.WriteString("update @" + r.Affinity + " { " + familyOf(r.Addr).String() + " saddr } ")
	}
	b.WriteString("dnat to " + addrPort(r.Addr, r.Port))
	return b.String()
}
func (r StickyEndpoint) String() string {
	f := familyOf(r.Addr)
	return fmt.Sprintf("%s saddr @%s meta l4proto %s update @%s { %s saddr } dnat to %s", f, r.Set, r.Proto, r.Set, f, addrPort(r.Addr, r.Port))
}
func (r MasqueradeHairpin) String() string {
	return r.Family.String() + " saddr . " + r.Family.String() + " daddr @" + r.Set + " masquerade"
}

func (Jump) isRule()              {}
func (Goto) isRule()              {}
func (CTNewJump) isRule()         {}
func (DispatchAddrPort) isRule()  {}
func (DispatchLocalPort) isRule() {}
func (MasqueradeMarked) isRule()  {}
func (Reject) isRule()            {}
func (MarkMasquerade) isRule()    {}
func (PickEndpoint) isRule()      {}
func (StickyEndpoint) isRule()    {}
func (MasqueradeHairpin) isRule() {}

// Render writes the ruleset as `nft -f` input for the table.
func (rs *Ruleset) Render() string {
	var b strings.Builder
	at := rs.Family.addrType()
	fmt.Fprintf(&b, "table %s %s {\n", rs.Family, Table)
	for _, m := range rs.Maps {
		key := at + " . inet_proto . inet_service"
		if m.Key == KeyProtoPort {
			key = "inet_proto . inet_service"
		}
		fmt.Fprintf(&b, "\tmap %s {\n\t\ttype %s : verdict\n", m.Name, key)
		if len(m.Elements) > 0 {
			b.WriteString("\t\telements = {\n")
			for _, e := range m.Elements {
				b.WriteString("\t\t\t")
				if m.Key == KeyAddrProtoPort {
					fmt.Fprintf(&b, "%s . ", e.Addr)
				}
				fmt.Fprintf(&b, "%s . %d : goto %s,\n", e.Proto, e.Port, e.Goto)
			}
			b.WriteString("\t\t}\n")
		}
		b.WriteString("\t}\n")
	}
	fmt.Fprintf(&b, "\tset %s {\n\t\ttype %s . %s\n", SetHairpin, at, at)
	if len(rs.Hairpin) > 0 {
		b.WriteString("\t\telements = {\n")
		for _, a := range rs.Hairpin {
			fmt.Fprintf(&b, "\t\t\t%s . %s,\n", a, a)
		}
		b.WriteString("\t\t}\n")
	}
	b.WriteString("\t}\n")
	for _, s := range rs.Sets {
		fmt.Fprintf(&b, "\tset %s {\n\t\ttype %s\n\t\tflags dynamic,timeout\n\t\ttimeout %ds\n\t}\n", s.Name, at, int64(s.Timeout/time.Second))
	}
	for _, c := range rs.Chains {
		fmt.Fprintf(&b, "\tchain %s {\n", c.Name)
		if c.Hook != nil {
			fmt.Fprintf(&b, "\t\ttype %s hook %s priority %d; policy accept;\n", c.Hook.Type, c.Hook.Hook, c.Hook.Priority)
		}
		for _, r := range c.Rules {
			fmt.Fprintf(&b, "\t\t%s\n", r)
		}
		b.WriteString("\t}\n")
	}
	b.WriteString("}\n")
	return b.String()
}

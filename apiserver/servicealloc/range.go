package servicealloc

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Key prefixes of the allocations. They are outside /registry so the bus
// does not publish them as objects.
const (
	IPPrefix       = "/kubebus/serviceips/"
	NodePortPrefix = "/kubebus/nodeports/"
)

// Defaults, as upstream's kube-apiserver.
const (
	DefaultClusterIPRange = "10.96.0.0/12"
	DefaultNodePortRange  = "30000-32767"
)

// maxHostBits bounds the cluster IP range, as upstream: a /12 for IPv4, a
// /108 for IPv6.
const maxHostBits = 20

// IPRange is the service cluster IP range. Addresses are numbered by their
// offset from the range's first address.
type IPRange struct {
	prefix netip.Prefix // masked
	size   uint64       // addresses in the prefix
}

// ParseIPRange parses a --service-cluster-ip-range CIDR.
func ParseIPRange(cidr string) (IPRange, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(cidr))
	if err != nil {
		return IPRange{}, fmt.Errorf("service cluster IP range %q is not a CIDR: %w", cidr, err)
	}
	if p.Addr().Is4In6() || p.Addr().Zone() != "" {
		return IPRange{}, fmt.Errorf("service cluster IP range %q: use a plain IPv4 or IPv6 CIDR", cidr)
	}
	p = p.Masked()
	host := p.Addr().BitLen() - p.Bits()
	if host > maxHostBits {
		return IPRange{}, fmt.Errorf("service cluster IP range %s is too large; for %d-bit addresses, the mask must be >= %d",
			p, p.Addr().BitLen(), p.Addr().BitLen()-maxHostBits)
	}
	if host < 2 {
		return IPRange{}, fmt.Errorf("service cluster IP range %s is too small; it must hold at least two usable addresses", p)
	}
	return IPRange{prefix: p, size: 1 << host}, nil
}

// String returns the CIDR.
func (r IPRange) String() string { return r.prefix.String() }

// Family returns the range's IP family.
func (r IPRange) Family() corev1.IPFamily {
	if r.prefix.Addr().Is4() {
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

// bounds returns the first and last offsets a Service may hold: not the
// network address, and for IPv4 not the broadcast address either.
func (r IPRange) bounds() (lo, hi uint64) {
	if r.prefix.Addr().Is4() {
		return 1, r.size - 2
	}
	return 1, r.size - 1
}

// Reserved returns the first usable address, kept for the `kubernetes`
// Service: it is never picked, only given when asked for.
func (r IPRange) Reserved() netip.Addr { return r.Addr(1) }

// Addr returns the address at offset off.
func (r IPRange) Addr(off uint64) netip.Addr {
	b := r.prefix.Addr().As16()
	low := binary.BigEndian.Uint32(b[12:]) + uint32(off)
	binary.BigEndian.PutUint32(b[12:], low)
	a := netip.AddrFrom16(b)
	if r.prefix.Addr().Is4() {
		a = a.Unmap()
	}
	return a
}

// Offset returns a's offset and whether a is an address a Service may hold.
func (r IPRange) Offset(a netip.Addr) (uint64, bool) {
	off, ok := r.rawOffset(a)
	lo, hi := r.bounds()
	return off, ok && off >= lo && off <= hi
}

// rawOffset returns a's offset from the range's first address, or
// math.MaxUint64 when a is past the prefix; false when a is of the other
// family or before the prefix.
func (r IPRange) rawOffset(a netip.Addr) (uint64, bool) {
	base := r.prefix.Addr()
	if a.Is4() != base.Is4() || a.Less(base) {
		return 0, false
	}
	if !r.prefix.Contains(a) {
		return math.MaxUint64, true
	}
	ab, bb := a.As16(), base.As16()
	return uint64(binary.BigEndian.Uint32(ab[12:]) - binary.BigEndian.Uint32(bb[12:])), true
}

// ipKey is the allocation key of an address. IPv4 octets are zero-padded
// and IPv6 addresses expanded, so keys sort in address order.
func ipKey(a netip.Addr) string {
	if a.Is4() {
		b := a.As4()
		return fmt.Sprintf("%s%03d.%03d.%03d.%03d", IPPrefix, b[0], b[1], b[2], b[3])
	}
	return IPPrefix + a.StringExpanded()
}

// parseIPKey reads an address back from its key.
func parseIPKey(key string) (netip.Addr, bool) {
	s, ok := strings.CutPrefix(key, IPPrefix)
	if !ok {
		return netip.Addr{}, false
	}
	if strings.Contains(s, ":") {
		a, err := netip.ParseAddr(s)
		return a, err == nil && a.Is6()
	}
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return netip.Addr{}, false
	}
	var b [4]byte
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 8)
		if err != nil || len(p) != 3 {
			return netip.Addr{}, false
		}
		b[i] = byte(n)
	}
	return netip.AddrFrom4(b), true
}

// PortRange is the node port range, Base to Base+Size-1.
type PortRange struct {
	Base, Size int
}

// ParsePortRange parses a --service-node-port-range: "30000-32767", or a
// single port.
func ParsePortRange(s string) (PortRange, error) {
	s = strings.TrimSpace(s)
	lo, hi, isRange := strings.Cut(s, "-")
	a, err := strconv.Atoi(lo)
	if err != nil {
		return PortRange{}, fmt.Errorf("node port range %q: want <first>-<last>", s)
	}
	b := a
	if isRange {
		if b, err = strconv.Atoi(hi); err != nil {
			return PortRange{}, fmt.Errorf("node port range %q: want <first>-<last>", s)
		}
	}
	if a < 1 || b > 65535 || b < a {
		return PortRange{}, fmt.Errorf("node port range %q: ports must be 1-65535, first <= last", s)
	}
	return PortRange{Base: a, Size: b - a + 1}, nil
}

// String returns the range as "first-last".
func (r PortRange) String() string { return fmt.Sprintf("%d-%d", r.Base, r.Base+r.Size-1) }

// Contains reports whether port is in the range.
func (r PortRange) Contains(port int) bool { return port >= r.Base && port < r.Base+r.Size }

// portKey is the allocation key of a node port.
func portKey(port int) string { return fmt.Sprintf("%s%05d", NodePortPrefix, port) }

// parsePortKey reads a node port back from its key.
func parsePortKey(key string) (int, bool) {
	s, ok := strings.CutPrefix(key, NodePortPrefix)
	if !ok || len(s) != 5 {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0 && n <= 65535
}

package simulate

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// DefaultNodeIPRange is where hollow nodes' addresses come from by default:
// a loopback range, so the API server's connections to their kubelets
// (pods/log) stay on this machine.
const DefaultNodeIPRange = "127.1.0.0/16"

// loopback is the only range hollow nodes may advertise.
var loopback = netip.MustParsePrefix("127.0.0.0/8")

// ParseNodeIPRange reads a range of hollow node addresses: an IPv4 prefix
// inside 127.0.0.0/8, since hollow nodes must not advertise an address
// that routes off this machine.
func ParseNodeIPRange(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("simulate: node IP range %q is not a CIDR: %w", s, err)
	}
	p = p.Masked()
	if err := checkLoopback(p); err != nil {
		return netip.Prefix{}, err
	}
	return p, nil
}

func checkLoopback(p netip.Prefix) error {
	if !p.IsValid() || !p.Addr().Is4() || p.Bits() < loopback.Bits() || !loopback.Contains(p.Addr()) {
		return fmt.Errorf("simulate: node IP range %s is outside 127.0.0.0/8: hollow nodes advertise only loopback addresses, so that nothing dials their kubelets off this machine", p)
	}
	return nil
}

// NodeIPs returns the addresses of hollow nodes 0..n-1 in r: node i gets
// the (i+1)-th address, so neither the range's first (network) nor its
// last (broadcast) address is used. r must come from ParseNodeIPRange.
func NodeIPs(r netip.Prefix, n int) ([]netip.Addr, error) {
	r = r.Masked()
	if err := checkLoopback(r); err != nil {
		return nil, err
	}
	hosts := uint64(0) // a /31 or /32 has neither a network nor a broadcast address to skip, but no room either
	if r.Bits() < 31 {
		hosts = uint64(1)<<(32-r.Bits()) - 2
	}
	if uint64(n) > hosts {
		return nil, fmt.Errorf("simulate: node IP range %s holds %d node addresses, too few for %d hollow nodes", r, hosts, n)
	}
	base4 := r.Addr().As4()
	base := binary.BigEndian.Uint32(base4[:])
	out := make([]netip.Addr, n)
	for i := range out {
		var a [4]byte
		binary.BigEndian.PutUint32(a[:], base+1+uint32(i))
		out[i] = netip.AddrFrom4(a)
	}
	return out, nil
}

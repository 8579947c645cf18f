package nodeipam

import (
	"errors"
	"fmt"
	"net/netip"
)

// ErrFull: every subnet of the cluster CIDR is in use.
var ErrFull = errors.New("nodeipam: the cluster CIDR has no free subnet")

// maxSubnetBits bounds how many subnets a cluster CIDR is cut into (2^16),
// as upstream's range allocator does.
const maxSubnetBits = 16

// cidrSet cuts a cluster CIDR into equal subnets of one size. It is pure.
type cidrSet struct {
	cluster netip.Prefix // masked
	bits    int          // subnet prefix length
}

func newCIDRSet(cluster string, bits int) (cidrSet, error) {
	p, err := netip.ParsePrefix(cluster)
	if err != nil {
		return cidrSet{}, fmt.Errorf("nodeipam: cluster CIDR %q: %w", cluster, err)
	}
	p = p.Masked()
	switch {
	case bits <= p.Bits():
		return cidrSet{}, fmt.Errorf("nodeipam: node mask size %d must be longer than the cluster CIDR's /%d", bits, p.Bits())
	case bits > p.Addr().BitLen():
		return cidrSet{}, fmt.Errorf("nodeipam: node mask size %d is longer than an address", bits)
	case bits-p.Bits() > maxSubnetBits:
		return cidrSet{}, fmt.Errorf("nodeipam: node mask size %d cuts %s into more than 2^%d subnets", bits, p, maxSubnetBits)
	}
	return cidrSet{cluster: p, bits: bits}, nil
}

// size is the number of subnets.
func (s cidrSet) size() int { return 1 << (s.bits - s.cluster.Bits()) }

// subnet returns the i-th subnet.
func (s cidrSet) subnet(i int) netip.Prefix {
	a := s.cluster.Addr().As16()
	off := 128 - s.cluster.Addr().BitLen() // a v4 address sits in the last 32 bits
	for b := s.bits - 1; b >= s.cluster.Bits(); b-- {
		if i&1 == 1 {
			pos := off + b
			a[pos/8] |= 0x80 >> (pos % 8)
		}
		i >>= 1
	}
	addr := netip.AddrFrom16(a)
	if s.cluster.Addr().Is4() {
		addr = addr.Unmap()
	}
	return netip.PrefixFrom(addr, s.bits)
}

// index returns the number of the subnet holding addr (which must be in the
// cluster CIDR).
func (s cidrSet) index(addr netip.Addr) int {
	a := addr.As16()
	off := 128 - addr.BitLen()
	i := 0
	for b := s.cluster.Bits(); b < s.bits; b++ {
		pos := off + b
		i = i<<1 | int(a[pos/8]>>(7-pos%8)&1)
	}
	return i
}

// overlapping returns the range [lo, hi) of subnets p overlaps.
func (s cidrSet) overlapping(p netip.Prefix) (lo, hi int) {
	p = p.Masked()
	if !p.IsValid() || p.Addr().Is4() != s.cluster.Addr().Is4() || !s.cluster.Overlaps(p) {
		return 0, 0
	}
	if p.Bits() <= s.cluster.Bits() {
		return 0, s.size()
	}
	lo = s.index(p.Addr())
	if p.Bits() >= s.bits {
		return lo, lo + 1
	}
	return lo, lo + 1<<(s.bits-p.Bits())
}

// allocate returns the first subnet that overlaps none of used.
func (s cidrSet) allocate(used []netip.Prefix) (netip.Prefix, error) {
	taken := make([]bool, s.size())
	for _, p := range used {
		lo, hi := s.overlapping(p)
		for i := lo; i < hi; i++ {
			taken[i] = true
		}
	}
	for i, t := range taken {
		if !t {
			return s.subnet(i), nil
		}
	}
	return netip.Prefix{}, ErrFull
}

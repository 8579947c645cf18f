package nodeipam

import (
	"errors"
	"net/netip"
	"testing"
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(ss))
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func TestNewCIDRSet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cluster  string
		bits     int
		wantErr  bool
		wantSize int
	}{
		{cluster: "10.244.0.0/16", bits: 24, wantSize: 256},
		{cluster: "10.244.7.9/16", bits: 24, wantSize: 256}, // masked
		{cluster: "10.0.0.0/8", bits: 24, wantSize: 65536},
		{cluster: "10.0.0.0/8", bits: 25, wantErr: true}, // 2^17 subnets
		{cluster: "10.244.0.0/16", bits: 16, wantErr: true},
		{cluster: "10.244.0.0/16", bits: 33, wantErr: true},
		{cluster: "fd00:10:244::/56", bits: 64, wantSize: 256},
		{cluster: "not-a-cidr", bits: 24, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.cluster, func(t *testing.T) {
			t.Parallel()
			s, err := newCIDRSet(tc.cluster, tc.bits)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if err == nil && s.size() != tc.wantSize {
				t.Fatalf("size = %d, want %d", s.size(), tc.wantSize)
			}
		})
	}
}

func TestSubnetAndIndex(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cluster string
		bits, i int
		want    string
	}{
		{"10.244.0.0/16", 24, 0, "10.244.0.0/24"},
		{"10.244.0.0/16", 24, 1, "10.244.1.0/24"},
		{"10.244.0.0/16", 24, 255, "10.244.255.0/24"},
		{"10.244.0.0/16", 26, 5, "10.244.1.64/26"},
		{"10.0.0.0/8", 24, 258, "10.1.2.0/24"},
		{"fd00:10:244::/56", 64, 3, "fd00:10:244:3::/64"},
		{"fd00::/48", 64, 0x1234, "fd00:0:0:1234::/64"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			s, err := newCIDRSet(tc.cluster, tc.bits)
			if err != nil {
				t.Fatal(err)
			}
			got := s.subnet(tc.i)
			if got.String() != tc.want {
				t.Fatalf("subnet(%d) = %s, want %s", tc.i, got, tc.want)
			}
			if back := s.index(got.Addr()); back != tc.i {
				t.Fatalf("index(%s) = %d, want %d", got.Addr(), back, tc.i)
			}
		})
	}
}

func TestAllocate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cluster string
		bits    int
		used    []netip.Prefix
		want    string
		wantErr error
	}{
		{name: "empty takes the first", cluster: "10.244.0.0/16", bits: 24, want: "10.244.0.0/24"},
		{name: "skips used", cluster: "10.244.0.0/16", bits: 24, used: prefixes("10.244.0.0/24", "10.244.1.0/24"), want: "10.244.2.0/24"},
		{name: "fills a hole", cluster: "10.244.0.0/16", bits: 24, used: prefixes("10.244.0.0/24", "10.244.2.0/24"), want: "10.244.1.0/24"},
		{name: "a larger used block covers several", cluster: "10.244.0.0/16", bits: 24, used: prefixes("10.244.0.0/23", "10.244.2.0/24"), want: "10.244.3.0/24"},
		{name: "a smaller used block takes its whole subnet", cluster: "10.244.0.0/16", bits: 24, used: prefixes("10.244.0.128/25"), want: "10.244.1.0/24"},
		{name: "unmasked used prefix", cluster: "10.244.0.0/16", bits: 24, used: prefixes("10.244.0.7/24"), want: "10.244.1.0/24"},
		{name: "outside the cluster is ignored", cluster: "10.244.0.0/16", bits: 24, used: prefixes("10.245.0.0/24", "192.168.0.0/16", "fd00::/64"), want: "10.244.0.0/24"},
		{name: "a supernet takes everything", cluster: "10.244.0.0/16", bits: 24, used: prefixes("10.0.0.0/8"), wantErr: ErrFull},
		{name: "full", cluster: "10.244.0.0/23", bits: 24, used: prefixes("10.244.0.0/24", "10.244.1.0/24"), wantErr: ErrFull},
		{name: "ipv6", cluster: "fd00:10:244::/56", bits: 64, used: prefixes("fd00:10:244::/64", "10.244.0.0/24"), want: "fd00:10:244:1::/64"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := newCIDRSet(tc.cluster, tc.bits)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.allocate(tc.used)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && got.String() != tc.want {
				t.Fatalf("allocate = %s, want %s", got, tc.want)
			}
		})
	}
}

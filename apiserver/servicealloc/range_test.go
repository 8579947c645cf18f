package servicealloc

import (
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestParseIPRange(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cidr, want  string
		family      corev1.IPFamily
		lo, hi      uint64
		reserved    string
		errContains string
	}{
		{cidr: "10.96.0.0/12", want: "10.96.0.0/12", family: corev1.IPv4Protocol, lo: 1, hi: 1<<20 - 2, reserved: "10.96.0.1"},
		{cidr: "10.0.0.7/24", want: "10.0.0.0/24", family: corev1.IPv4Protocol, lo: 1, hi: 254, reserved: "10.0.0.1"},
		{cidr: "192.168.5.0/30", want: "192.168.5.0/30", family: corev1.IPv4Protocol, lo: 1, hi: 2, reserved: "192.168.5.1"},
		{cidr: "fd00:10:96::/112", want: "fd00:10:96::/112", family: corev1.IPv6Protocol, lo: 1, hi: 1<<16 - 1, reserved: "fd00:10:96::1"},
		{cidr: "10.0.0.0/8", errContains: "too large; for 32-bit addresses, the mask must be >= 12"},
		{cidr: "fd00::/64", errContains: "too large; for 128-bit addresses, the mask must be >= 108"},
		{cidr: "10.0.0.0/31", errContains: "too small"},
		{cidr: "10.0.0.0", errContains: "not a CIDR"},
		{cidr: "", errContains: "not a CIDR"},
		{cidr: "::ffff:10.0.0.0/120", errContains: "plain IPv4 or IPv6"},
	} {
		t.Run(c.cidr, func(t *testing.T) {
			t.Parallel()
			r, err := ParseIPRange(c.cidr)
			if c.errContains != "" {
				if err == nil || !strings.Contains(err.Error(), c.errContains) {
					t.Fatalf("ParseIPRange(%q) error = %v, want one containing %q", c.cidr, err, c.errContains)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			lo, hi := r.bounds()
			if r.String() != c.want || r.Family() != c.family || lo != c.lo || hi != c.hi || r.Reserved().String() != c.reserved {
				t.Errorf("ParseIPRange(%q) = %s %s bounds [%d,%d] reserved %s; want %s %s [%d,%d] %s",
					c.cidr, r, r.Family(), lo, hi, r.Reserved(), c.want, c.family, c.lo, c.hi, c.reserved)
			}
		})
	}
}

func TestIPRangeOffsets(t *testing.T) {
	t.Parallel()
	r, err := ParseIPRange("10.96.0.0/12")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ip  string
		off uint64
		ok  bool
	}{
		{"10.96.0.1", 1, true},
		{"10.96.1.0", 256, true},
		{"10.111.255.254", 1<<20 - 2, true},
		{"10.111.255.255", 1<<20 - 1, false}, // broadcast
		{"10.96.0.0", 0, false},              // network
		{"10.112.0.0", 0, false},
		{"10.95.255.255", 0, false},
		{"fd00::1", 0, false},
	} {
		off, ok := r.Offset(netip.MustParseAddr(c.ip))
		if ok != c.ok || ok && off != c.off {
			t.Errorf("Offset(%s) = %d, %v; want %d, %v", c.ip, off, ok, c.off, c.ok)
		}
		if c.ok {
			if back := r.Addr(off).String(); back != c.ip {
				t.Errorf("Addr(%d) = %s, want %s", off, back, c.ip)
			}
		}
	}
	v6, err := ParseIPRange("fd00:10:96::/112")
	if err != nil {
		t.Fatal(err)
	}
	if a := v6.Addr(0xabcd); a.String() != "fd00:10:96::abcd" {
		t.Errorf("v6 Addr(0xabcd) = %s", a)
	}
	if off, ok := v6.Offset(netip.MustParseAddr("fd00:10:96::ffff")); !ok || off != 0xffff {
		t.Errorf("v6 Offset(::ffff) = %d, %v", off, ok)
	}
}

func TestIPKeysSortByAddress(t *testing.T) {
	t.Parallel()
	addrs := []string{"10.96.0.2", "10.96.0.10", "10.96.1.1", "10.100.0.1", "10.96.0.100", "9.255.255.255"}
	var keys []string
	for _, s := range addrs {
		a := netip.MustParseAddr(s)
		k := ipKey(a)
		back, ok := parseIPKey(k)
		if !ok || back != a {
			t.Fatalf("parseIPKey(%q) = %s, %v; want %s", k, back, ok, a)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var got []netip.Addr
	for _, k := range keys {
		a, _ := parseIPKey(k)
		got = append(got, a)
	}
	if !slices.IsSortedFunc(got, func(a, b netip.Addr) int { return a.Compare(b) }) {
		t.Errorf("keys in string order give addresses %v, not sorted", got)
	}
	if k := ipKey(netip.MustParseAddr("10.96.0.10")); k != IPPrefix+"010.096.000.010" {
		t.Errorf("ipKey(10.96.0.10) = %q", k)
	}
	v6 := netip.MustParseAddr("fd00::1")
	if back, ok := parseIPKey(ipKey(v6)); !ok || back != v6 {
		t.Errorf("v6 key round trip: %s, %v", back, ok)
	}
	for _, bad := range []string{IPPrefix + "10.96.0.1", IPPrefix + "010.096.000", "/other/010.096.000.001", IPPrefix + "256.000.000.001", IPPrefix + "zz::1"} {
		if a, ok := parseIPKey(bad); ok {
			t.Errorf("parseIPKey(%q) = %s, want rejected", bad, a)
		}
	}
}

func TestParsePortRange(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want PortRange
		err  bool
	}{
		{in: "30000-32767", want: PortRange{Base: 30000, Size: 2768}},
		{in: " 8000-8000 ", want: PortRange{Base: 8000, Size: 1}},
		{in: "31000", want: PortRange{Base: 31000, Size: 1}},
		{in: "32767-30000", err: true},
		{in: "0-100", err: true},
		{in: "1-65536", err: true},
		{in: "a-b", err: true},
		{in: "30000-", err: true},
		{in: "", err: true},
	} {
		got, err := ParsePortRange(c.in)
		if c.err != (err != nil) || !c.err && got != c.want {
			t.Errorf("ParsePortRange(%q) = %+v, %v; want %+v, error %v", c.in, got, err, c.want, c.err)
		}
	}
	r := PortRange{Base: 30000, Size: 2768}
	if r.String() != "30000-32767" || !r.Contains(30000) || !r.Contains(32767) || r.Contains(32768) || r.Contains(29999) {
		t.Errorf("PortRange %s bounds wrong", r)
	}
	if k := portKey(30080); k != NodePortPrefix+"30080" {
		t.Errorf("portKey = %q", k)
	}
	if k := portKey(80); k != NodePortPrefix+"00080" {
		t.Errorf("portKey = %q", k)
	}
	if p, ok := parsePortKey(portKey(80)); !ok || p != 80 {
		t.Errorf("parsePortKey round trip = %d, %v", p, ok)
	}
	for _, bad := range []string{NodePortPrefix + "80", NodePortPrefix + "99999", NodePortPrefix + "00000", "/x/30000"} {
		if p, ok := parsePortKey(bad); ok {
			t.Errorf("parsePortKey(%q) = %d, want rejected", bad, p)
		}
	}
}

func TestGap(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		from, to uint64
		taken    []uint64
		complete bool
		skip     []uint64
		want     gapResult
	}{
		{name: "nothing taken", from: 5, to: 10, complete: true, want: gapResult{free: 5, found: true}},
		{name: "first taken", from: 5, to: 10, taken: []uint64{5, 6, 8}, complete: true, want: gapResult{free: 7, found: true}},
		{name: "skip counts as taken", from: 5, to: 10, taken: []uint64{5, 6}, skip: []uint64{7}, complete: true, want: gapResult{free: 8, found: true}},
		{name: "all taken", from: 5, to: 7, taken: []uint64{5, 6, 7}, complete: true, want: gapResult{}},
		{name: "taken and skipped fill it", from: 5, to: 7, taken: []uint64{5, 7}, skip: []uint64{6}, complete: true, want: gapResult{}},
		{name: "gap inside an incomplete page", from: 5, to: 100, taken: []uint64{5, 7}, want: gapResult{free: 6, found: true}},
		{name: "incomplete page without gap", from: 5, to: 100, taken: []uint64{5, 6, 7}, want: gapResult{more: true, next: 8}},
		{name: "claims past the end", from: 5, to: 6, taken: []uint64{5, 6, 9}, want: gapResult{}},
		{name: "claim past the end of an incomplete page", from: 5, to: 100, taken: []uint64{5, 1 << 60}, want: gapResult{free: 6, found: true}},
		{name: "single offset free", from: 3, to: 3, complete: true, want: gapResult{free: 3, found: true}},
		{name: "single offset taken", from: 3, to: 3, taken: []uint64{3}, complete: true, want: gapResult{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			skip := func(o uint64) bool { return slices.Contains(c.skip, o) }
			if got := gap(c.from, c.to, c.taken, c.complete, skip); got != c.want {
				t.Errorf("gap = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestSegments(t *testing.T) {
	t.Parallel()
	if got := segments(1, 10, 1); len(got) != 1 || got[0] != [2]uint64{1, 10} {
		t.Errorf("segments(1,10,1) = %v", got)
	}
	if got := segments(1, 10, 4); len(got) != 2 || got[0] != [2]uint64{4, 10} || got[1] != [2]uint64{1, 3} {
		t.Errorf("segments(1,10,4) = %v", got)
	}
	if got := segments(0, 10, 10); len(got) != 2 || got[0] != [2]uint64{10, 10} || got[1] != [2]uint64{0, 9} {
		t.Errorf("segments(0,10,10) = %v", got)
	}
}

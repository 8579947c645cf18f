package simulate

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseNodeIPRange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want, wantErr string
	}{
		{in: DefaultNodeIPRange, want: "127.1.0.0/16"},
		{in: "127.0.0.0/8", want: "127.0.0.0/8"},
		{in: "127.200.3.9/24", want: "127.200.3.0/24"},
		{in: "10.10.0.0/16", wantErr: "outside 127.0.0.0/8"},
		{in: "0.0.0.0/0", wantErr: "outside 127.0.0.0/8"},
		{in: "126.0.0.0/7", wantErr: "outside 127.0.0.0/8"},
		{in: "::1/128", wantErr: "outside 127.0.0.0/8"},
		{in: "::ffff:127.1.0.0/112", wantErr: "outside 127.0.0.0/8"},
		{in: "127.1.0.1", wantErr: "not a CIDR"},
		{in: "", wantErr: "not a CIDR"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseNodeIPRange(tc.in)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseNodeIPRange(%q) = %v, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
				}
			case err != nil || got.String() != tc.want:
				t.Fatalf("ParseNodeIPRange(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestNodeIPs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		r       string
		n       int
		want    map[int]string // index -> address
		wantErr string
	}{
		{name: "the first node skips the network address", r: "127.1.0.0/16", n: 1, want: map[int]string{0: "127.1.0.1"}},
		{name: "by index across octets", r: "127.1.0.0/16", n: 500, want: map[int]string{0: "127.1.0.1", 1: "127.1.0.2", 254: "127.1.0.255", 255: "127.1.1.0", 499: "127.1.1.244"}},
		{name: "a range given with host bits counts from its network", r: "127.9.9.9/24", n: 3, want: map[int]string{2: "127.9.9.3"}},
		{name: "a /24 holds 254 nodes", r: "127.2.0.0/24", n: 254, want: map[int]string{253: "127.2.0.254"}},
		{name: "the range exhausted", r: "127.2.0.0/24", n: 255, wantErr: "holds 254 node addresses, too few for 255"},
		{name: "a /31 holds none", r: "127.2.0.0/31", n: 1, wantErr: "holds 0 node addresses"},
		{name: "the whole loopback range", r: "127.0.0.0/8", n: 65000, want: map[int]string{0: "127.0.0.1", 64999: "127.0.253.232"}},
		{name: "no nodes", r: "127.1.0.0/16", n: 0, want: map[int]string{}},
		{name: "a routable range is refused", r: "10.10.0.0/16", n: 1, wantErr: "outside 127.0.0.0/8"},
		{name: "a range around loopback is refused", r: "64.0.0.0/2", n: 1, wantErr: "outside 127.0.0.0/8"},
		{name: "IPv6 is refused", r: "fd00::/64", n: 1, wantErr: "outside 127.0.0.0/8"},
		{name: "no range is refused", r: "", n: 1, wantErr: "outside 127.0.0.0/8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r netip.Prefix
			if tc.r != "" {
				r = netip.MustParsePrefix(tc.r)
			}
			got, err := NodeIPs(r, tc.n)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("NodeIPs(%s, %d) = %d addresses, %v; want an error containing %q", tc.r, tc.n, len(got), err, tc.wantErr)
				}
				return
			}
			if err != nil || len(got) != tc.n {
				t.Fatalf("NodeIPs(%s, %d) = %d addresses, %v", tc.r, tc.n, len(got), err)
			}
			seen := map[netip.Addr]bool{}
			for i, a := range got {
				if !loopback.Contains(a) || seen[a] {
					t.Fatalf("node %d: %s is not a distinct loopback address", i, a)
				}
				seen[a] = true
				if w, ok := tc.want[i]; ok && a.String() != w {
					t.Errorf("node %d: %s, want %s", i, a, w)
				}
			}
		})
	}
}

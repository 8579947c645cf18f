package pki

import (
	"crypto/x509"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseHosts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		hosts   []string
		wantDNS []string
		wantIPs []string
		wantErr bool
	}{
		{name: "mixed", hosts: []string{"localhost", "127.0.0.1", "::1"}, wantDNS: []string{"localhost"}, wantIPs: []string{"127.0.0.1", "::1"}},
		{name: "duplicates and case", hosts: []string{"Node-1.Example", "node-1.example", "::ffff:10.0.0.1", "10.0.0.1"}, wantDNS: []string{"node-1.example"}, wantIPs: []string{"10.0.0.1"}},
		{name: "wildcard", hosts: []string{"*.svc.local"}, wantDNS: []string{"*.svc.local"}},
		{name: "port", hosts: []string{"localhost:6443"}, wantErr: true},
		{name: "space", hosts: []string{"local host"}, wantErr: true},
		{name: "empty label", hosts: []string{"a..b"}, wantErr: true},
		{name: "zone", hosts: []string{"fe80::1%lo"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			hs, err := parseHosts(tt.hosts)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parseHosts(%q) succeeded", tt.hosts)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ips []string
			for _, a := range hs.ips {
				ips = append(ips, a.String())
			}
			if !slices.Equal(hs.dns, tt.wantDNS) || !slices.Equal(ips, tt.wantIPs) {
				t.Errorf("got DNS %q IPs %q, want %q %q", hs.dns, ips, tt.wantDNS, tt.wantIPs)
			}
		})
	}
}

func TestHostsRoundTrip(t *testing.T) {
	t.Parallel()
	want := hostSet{dns: []string{"a.example", "localhost"}, ips: []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}}
	now := time.Now()
	ca, err := newCA(now)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := newLeaf(ca, leafSpec{commonName: "s", usage: x509.ExtKeyUsageServerAuth, hosts: want}, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := hostsOf(kp.cert); !got.equal(want) {
		t.Errorf("hostsOf = %v, want %v", got, want)
	}
}

func TestFileName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		user, want string
	}{
		{"system:kube-scheduler", "system_kube-scheduler"},
		{"system:node:worker-1.example", "system_node_worker-1.example"},
		{"Alice", "%41lice"},
		{"a_b", "a%5Fb"},
		{"../etc/passwd", "..%2Fetc%2Fpasswd"},
		{"a b", "a%20b"},
	}
	for _, tt := range tests {
		if got := fileName(tt.user); got != tt.want {
			t.Errorf("fileName(%q) = %q, want %q", tt.user, got, tt.want)
		}
	}

	long := strings.Repeat("x", 300)
	a, b := fileName(long), fileName(long+"y")
	if len(a) > maxFileName+20 || a == b {
		t.Errorf("long names: %q (%d bytes) and %q", a, len(a), b)
	}
}

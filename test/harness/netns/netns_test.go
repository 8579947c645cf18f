package netns

import (
	"net/netip"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/kubebus/kubebus/test/prereq"
)

func TestLinesIn(t *testing.T) {
	t.Parallel()
	text := strings.Join([]string{
		`-A POSTROUTING -s 10.244.7.2/32 -m comment --comment "name: \"kbtest\"" -j CNI-1`,
		`-A CNI-DN-1 -p tcp -m tcp --dport 30001 -j DNAT --to-destination 10.244.7.2:8080`,
		`ip daddr 10.244.7.0/24 counter packets 0 bytes 0 accept`,
		`5: kbt0    inet 10.244.7.1/24 brd 10.244.7.255 scope global kbt0`,
		`-A POSTROUTING -s 172.17.0.0/16 ! -o docker0 -j MASQUERADE`,
		`-A FORWARD -d 0.0.0.0/0 -j ACCEPT`,
		`-A X -s 10.244.70.2/32 -j ACCEPT`,
		`port 10244 and 10.244.7`,
	}, "\n")
	got := linesIn(text, netip.MustParsePrefix("10.244.7.0/24"))
	want := strings.Split(text, "\n")[:4]
	if !reflect.DeepEqual(got, want) {
		t.Errorf("linesIn:\n%q\nwant\n%q", got, want)
	}
	if got := linesIn("inet6 fd00:10::5/64 scope global", netip.MustParsePrefix("fd00:10::/64")); len(got) != 1 {
		t.Errorf("IPv6: %q", got)
	}
}

func TestIntegrationNode(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test skipped under -short")
	}
	if os.Geteuid() != 0 {
		prereq.Missing(t, "needs root to create network namespaces")
	}
	if _, err := exec.LookPath("iptables-save"); err != nil {
		prereq.Missing(t, "iptables-save not installed (Debian package iptables)")
	}
	n := New(t)
	if !strings.HasPrefix(n.Name, Prefix) || n.Path != "/run/netns/"+n.Name {
		t.Fatalf("node %+v", n)
	}
	if out, err := n.IP("-o", "link", "show", "lo"); err != nil || !strings.Contains(out, "UP") {
		t.Errorf("loopback: %q %v", out, err)
	}
	n.AddAddress(t, "kbt0", "10.244.9.2/24")
	p := netip.MustParsePrefix("10.244.9.0/24")
	if _, err := n.Exec("iptables", "-A", "INPUT", "-s", "10.244.9.7/32", "-j", "ACCEPT"); err != nil {
		t.Fatal(err)
	}
	tr, err := n.Traces("kbt0", p)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Link || len(tr.Addrs) != 1 || !tr.HasRule("10.244.9.7") || tr.Empty() {
		t.Errorf("traces in the node: %s", tr)
	}
	if route, err := n.IP("route", "get", "192.0.2.1"); err != nil || !strings.Contains(route, "src 10.244.9.2") {
		t.Errorf("route from the node: %q %v", route, err)
	}
	host, err := HostTraces("kbt0", p)
	if err != nil || !host.Empty() {
		t.Errorf("traces in the host: %s %v", host, err)
	}
	if err := n.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(n.Path); !os.IsNotExist(err) {
		t.Errorf("%s after Remove: %v", n.Path, err)
	}
	if err := n.Remove(); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

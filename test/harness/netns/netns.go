// Package netns gives an integration test a network namespace of its own to
// play the node's (the "node network namespace" of kubelet/cni): the CNI
// bridge, the pod CIDR's gateway address, the routes and the packet rules
// go there, never into the host's namespace. It also looks for the traces
// a pod network leaves in a namespace, so that a test can check that the
// host holds none. It needs root and the ip tool (iproute2).
package netns

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Prefix starts the name of every namespace New creates, so that leftovers
// of a crashed test are easy to find (`ip netns list | grep kbt-`).
const Prefix = "kbt-"

// Node is a network namespace made for one test, named under /run/netns.
type Node struct {
	// Name is the namespace's name for `ip -n` and `ip netns exec`.
	Name string
	// Path is the namespace's bind mount, /run/netns/<Name>.
	Path string
}

// New creates a namespace named Prefix plus random hex (`ip netns add`),
// brings its loopback up and removes it when the test ends.
func New(t testing.TB) *Node {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	n := &Node{Name: Prefix + hex.EncodeToString(b[:])}
	n.Path = filepath.Join("/run/netns", n.Name)
	if out, err := exec.Command("ip", "netns", "add", n.Name).CombinedOutput(); err != nil {
		t.Fatalf("netns: ip netns add %s: %v: %s", n.Name, err, out)
	}
	t.Cleanup(func() {
		if err := n.Remove(); err != nil {
			t.Errorf("netns: %v", err)
		}
	})
	if _, err := n.IP("link", "set", "lo", "up"); err != nil {
		t.Fatal(err)
	}
	return n
}

// Remove deletes the namespace's name; the namespace ends with the last
// process or socket in it. Removing it twice is not an error.
func (n *Node) Remove() error {
	if _, err := os.Stat(n.Path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if out, err := exec.Command("ip", "netns", "del", n.Name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns del %s: %v: %s", n.Name, err, out)
	}
	return nil
}

// IP runs `ip -n <Name> args...` and returns its output.
func (n *Node) IP(args ...string) (string, error) {
	return run("ip", append([]string{"-n", n.Name}, args...)...)
}

// Exec runs a command inside the namespace (`ip netns exec`) and returns
// its standard output.
func (n *Node) Exec(name string, args ...string) (string, error) {
	return run("ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// AddAddress gives the namespace an address: prefix (e.g. "198.18.7.2/24")
// on ifName, one end of a veth pair whose other end (ifName+"p") is in the
// namespace too, and the default route through ifName to a gateway in the
// prefix that does not exist. The address is then the namespace's source
// address for anywhere; packets sent that way are dropped (the gateway
// never answers ARP). ifName must have at most 14 characters.
func (n *Node) AddAddress(t testing.TB, ifName, prefix string) {
	t.Helper()
	p, err := netip.ParsePrefix(prefix)
	if err != nil || !p.Addr().Is4() || p.Bits() > 30 {
		t.Fatalf("netns: address %q: want an IPv4 address with a prefix of at most /30", prefix)
	}
	gw := p.Masked().Addr().Next()
	if gw == p.Addr() {
		gw = gw.Next()
	}
	for _, args := range [][]string{
		{"link", "add", ifName, "type", "veth", "peer", "name", ifName + "p"},
		{"addr", "add", prefix, "dev", ifName},
		{"link", "set", ifName + "p", "up"},
		{"link", "set", ifName, "up"},
		{"route", "add", "default", "via", gw.String(), "dev", ifName},
	} {
		if _, err := n.IP(args...); err != nil {
			t.Fatal(err)
		}
	}
}

// Traces are what a pod network left in a network namespace.
type Traces struct {
	// Link is set when the bridge exists.
	Link bool
	// Addrs are the lines of `ip -o addr` with an address in the pod CIDR.
	Addrs []string
	// Rules are the lines of iptables-save and `nft list ruleset` naming an
	// address in the pod CIDR.
	Rules []string
}

// Empty reports whether there are no traces.
func (tr Traces) Empty() bool { return !tr.Link && len(tr.Addrs) == 0 && len(tr.Rules) == 0 }

func (tr Traces) String() string {
	return fmt.Sprintf("bridge present: %v; addresses: %q; rules: %q", tr.Link, tr.Addrs, tr.Rules)
}

// HasRule reports whether a rule line contains s.
func (tr Traces) HasRule(s string) bool {
	for _, r := range tr.Rules {
		if strings.Contains(r, s) {
			return true
		}
	}
	return false
}

// HostTraces looks for the bridge and the pod CIDR in the host's (the
// caller's) network namespace.
func HostTraces(bridge string, podCIDR netip.Prefix) (Traces, error) {
	return traces(run, bridge, podCIDR)
}

// Traces looks for the bridge and the pod CIDR in the namespace.
func (n *Node) Traces(bridge string, podCIDR netip.Prefix) (Traces, error) {
	return traces(n.Exec, bridge, podCIDR)
}

func traces(runIn func(name string, args ...string) (string, error), bridge string, podCIDR netip.Prefix) (Traces, error) {
	var tr Traces
	links, err := runIn("ip", "-o", "link", "show")
	if err != nil {
		return tr, err
	}
	for _, l := range lines(links) {
		if f := strings.Fields(l); len(f) > 1 && strings.Split(strings.TrimSuffix(f[1], ":"), "@")[0] == bridge {
			tr.Link = true
		}
	}
	addrs, err := runIn("ip", "-o", "addr", "show")
	if err != nil {
		return tr, err
	}
	tr.Addrs = linesIn(addrs, podCIDR)
	rules, err := runIn("iptables-save")
	if err != nil {
		return tr, err
	}
	tr.Rules = linesIn(rules, podCIDR)
	if _, err := exec.LookPath("nft"); err == nil {
		nft, err := runIn("nft", "list", "ruleset")
		if err != nil {
			return tr, err
		}
		tr.Rules = append(tr.Rules, linesIn(nft, podCIDR)...)
	}
	return tr, nil
}

// linesIn returns the lines of text that name an address in p (alone, as a
// prefix or with a port).
func linesIn(text string, p netip.Prefix) []string {
	var out []string
	for _, l := range lines(text) {
		for _, tok := range strings.FieldsFunc(l, func(r rune) bool {
			return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' || r == '.' || r == ':' || r == '/')
		}) {
			if inPrefix(tok, p) {
				out = append(out, strings.TrimSpace(l))
				break
			}
		}
	}
	return out
}

func inPrefix(tok string, p netip.Prefix) bool {
	if a, err := netip.ParseAddr(tok); err == nil {
		return p.Contains(a)
	}
	if q, err := netip.ParsePrefix(tok); err == nil {
		return p.Contains(q.Addr())
	}
	if ap, err := netip.ParseAddrPort(tok); err == nil {
		return p.Contains(ap.Addr())
	}
	return false
}

func lines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// run runs a command and returns its standard output; a failure's error
// holds its standard error.
func run(name string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Do runs fn on an OS thread of its own moved into the namespace and
// returns fn's error. The thread is never unlocked, so it ends with its
// goroutine and nothing else ever runs in the namespace by accident;
// sockets fn opens (listeners, connections) belong to the namespace and
// may be used from any goroutine afterwards.
func (n *Node) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(n.Path)
		if err != nil {
			errc <- err
			return
		}
		err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
		f.Close()
		if err != nil {
			errc <- fmt.Errorf("netns: entering %s: %w", n.Name, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// Link connects node and other by a veth pair: dev in node with nodeAddr,
// dev+"p" in other with otherAddr (both /24), and other's default route
// through node, as a node and one of its pods. dev must have at most 14
// characters.
func Link(t testing.TB, node, other *Node, dev, nodeAddr, otherAddr string) {
	t.Helper()
	for _, c := range []struct {
		n    *Node
		args []string
	}{
		{node, []string{"link", "add", dev, "type", "veth", "peer", "name", dev + "p", "netns", other.Name}},
		{node, []string{"addr", "add", nodeAddr + "/24", "dev", dev}},
		{node, []string{"link", "set", dev, "up"}},
		{other, []string{"addr", "add", otherAddr + "/24", "dev", dev + "p"}},
		{other, []string{"link", "set", dev + "p", "up"}},
		{other, []string{"route", "add", "default", "via", nodeAddr}},
	} {
		if _, err := c.n.IP(c.args...); err != nil {
			t.Fatal(err)
		}
	}
}

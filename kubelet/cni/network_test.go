package cni

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubebus/kubebus/kubelet/runtime"
	"github.com/kubebus/kubebus/test/harness/netns"
	"github.com/kubebus/kubebus/test/prereq"
)

// requireNetworkPrereqs skips unless the test can create namespaces and run
// the CNI plugins.
func requireNetworkPrereqs(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test skipped under -short")
	}
	if os.Geteuid() != 0 {
		prereq.Missing(t, "needs root to create network namespaces and bridges")
	}
	for _, p := range []string{"bridge", "host-local", "portmap", "firewall", "loopback"} {
		found := false
		for _, d := range DefaultPluginDirs {
			if _, err := os.Stat(filepath.Join(d, p)); err == nil {
				found = true
			}
		}
		if !found {
			prereq.Missing(t, "CNI plugin %s not installed in %v (Debian package containernetworking-plugins)", p, DefaultPluginDirs)
		}
	}
}

// linksOnBridge lists the interfaces enslaved to bridge in the node's
// namespace.
func linksOnBridge(t *testing.T, node *netns.Node, bridge string) []string {
	t.Helper()
	out, err := node.IP("-o", "link", "show", "master", bridge)
	if err != nil {
		if strings.Contains(err.Error(), "does not exist") || strings.Contains(err.Error(), "Cannot find device") {
			return nil
		}
		t.Fatal(err)
	}
	var links []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 1 {
			links = append(links, strings.TrimSuffix(f[1], ":"))
		}
	}
	return links
}

// newNode makes the test's node network namespace, with loopback up and
// the address nodeAddr on a dummy interface, removed at the end.
func newNode(t *testing.T, nodeAddr string) *netns.Node {
	t.Helper()
	node := netns.New(t)
	node.AddAddress(t, "node0", nodeAddr)
	return node
}

// requireHostClean fails the test if the host's network namespace holds
// the bridge, an address in the pod CIDR or a packet rule naming one.
func requireHostClean(t *testing.T, bridge string, podCIDR netip.Prefix) {
	t.Helper()
	tr, err := netns.HostTraces(bridge, podCIDR)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Empty() {
		t.Errorf("the host's network namespace holds traces of the pod network %s: %s", podCIDR, tr)
	}
}

// serveInNetNS listens on port in the namespace and answers each connection
// with reply. The listener closes when the test ends.
func serveInNetNS(t *testing.T, nsPath string, port int, reply string) {
	t.Helper()
	var l net.Listener
	err := InNetNS(nsPath, func() error {
		var err error
		l, err = net.Listen("tcp", fmt.Sprintf(":%d", port))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, reply)
			c.Close()
		}
	}()
}

// readFrom dials addr from the namespace at nsPath and returns what the
// server sent.
func readFrom(nsPath, addr string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := Dialer(nsPath)(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	b, err := io.ReadAll(c)
	return string(b), err
}

func TestIntegrationNetwork(t *testing.T) {
	requireNetworkPrereqs(t)
	ctx := context.Background()
	dir := t.TempDir()
	bridge := fmt.Sprintf("kbt%d", os.Getpid()%100000)
	cidr := netip.MustParsePrefix("10.244.78.0/24")
	nodeIP := "198.18.78.2"
	node := newNode(t, nodeIP+"/24")
	// Runs after the node's namespace is gone (cleanups run last first).
	t.Cleanup(func() { requireHostClean(t, bridge, cidr) })

	n, err := New(Config{PodCIDR: cidr.String(), BridgeName: bridge, NetworkName: "kbtest", Dir: dir, NetNS: node.Path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "kbtest.conflist")); err != nil {
		t.Errorf("configuration not written: %v", err)
	}

	nsPath := filepath.Join(dir, "netns", "pod1")
	if err := CreateNetNS(nsPath); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { RemoveNetNS(nsPath) })
	if !IsNetNS(nsPath) {
		t.Fatalf("%s is not a network namespace", nsPath)
	}
	if err := CreateNetNS(nsPath); err == nil {
		t.Error("creating an existing namespace: no error")
	}

	hostPort := 30000 + os.Getpid()%20000
	ip, err := n.Setup(ctx, "pod1", nsPath, []runtime.PortMapping{{ContainerPort: 8080, HostPort: int32(hostPort), Protocol: "TCP"}})
	if err != nil {
		t.Fatal(err)
	}
	addr, err := netip.ParseAddr(ip)
	if err != nil || !cidr.Contains(addr) {
		t.Fatalf("pod IP %q not in the pod CIDR", ip)
	}
	if _, err := os.Stat(filepath.Join(dir, "ipam", "kbtest", ip)); err != nil {
		t.Errorf("host-local holds no allocation for %s: %v", ip, err)
	}
	if links := linksOnBridge(t, node, bridge); len(links) != 1 {
		t.Errorf("links on %s: %v, want one veth", bridge, links)
	}

	// The bridge, its gateway address and the rules of bridge (masquerade),
	// portmap and firewall are in the node's namespace, not the host's.
	t.Run("everything in the node's namespace", func(t *testing.T) {
		if _, err := node.IP("link", "show", bridge); err != nil {
			t.Errorf("no bridge in the node's namespace: %v", err)
		}
		if out, err := exec.Command("ip", "link", "show", bridge).CombinedOutput(); err == nil {
			t.Errorf("bridge %s in the host's namespace: %s", bridge, out)
		}
		tr, err := node.Traces(bridge, cidr)
		if err != nil {
			t.Fatal(err)
		}
		if !tr.Link || len(tr.Addrs) == 0 || !strings.Contains(strings.Join(tr.Addrs, "\n"), "10.244.78.1/24") {
			t.Errorf("node namespace: %s; want the bridge with the gateway 10.244.78.1/24", tr)
		}
		for _, want := range []string{
			"-j CNI-",                  // bridge's masquerade chain
			fmt.Sprintf("%s:8080", ip), // portmap's DNAT
			fmt.Sprintf("-A CNI-FORWARD -d %s/32", ip), // firewall
		} {
			if !tr.HasRule(want) {
				t.Errorf("no rule with %q in the node's namespace; rules naming the pod CIDR: %q", want, tr.Rules)
			}
		}
		requireHostClean(t, bridge, cidr)
	})

	// The pod's loopback is up and the pod is reachable from the node.
	serveInNetNS(t, nsPath, 8080, "hello from pod1")
	if got, err := readFrom(nsPath, "127.0.0.1:8080"); err != nil || got != "hello from pod1" {
		t.Errorf("loopback in the pod: %q, %v", got, err)
	}
	if got, err := readFrom(node.Path, net.JoinHostPort(ip, "8080")); err != nil || got != "hello from pod1" {
		t.Errorf("node -> pod IP: %q, %v", got, err)
	}

	// A second pod reaches the first through the hostPort on the node's
	// bridge address, and through its IP.
	ns2 := filepath.Join(dir, "netns", "pod2")
	if err := CreateNetNS(ns2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { RemoveNetNS(ns2) })
	ip2, err := n.Setup(ctx, "pod2", ns2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ip2 == ip {
		t.Fatalf("two pods got the same IP %s", ip)
	}
	if got, err := readFrom(ns2, net.JoinHostPort(ip, "8080")); err != nil || got != "hello from pod1" {
		t.Errorf("pod2 -> pod1 IP: %q, %v", got, err)
	}
	gw := netip.MustParseAddr("10.244.78.1")
	if got, err := readFrom(ns2, netip.AddrPortFrom(gw, uint16(hostPort)).String()); err != nil || got != "hello from pod1" {
		t.Errorf("pod2 -> hostPort on the gateway %s: %q, %v", gw, got, err)
	}
	// The hostPort from the node itself: its own address and 127.0.0.1
	// (portmap sets route_localnet on the bridge, in the node's namespace).
	for _, a := range []string{nodeIP, "127.0.0.1"} {
		if got, err := readFrom(node.Path, net.JoinHostPort(a, fmt.Sprint(hostPort))); err != nil || got != "hello from pod1" {
			t.Errorf("node -> %s:hostPort: %q, %v", a, got, err)
		}
	}

	// Teardown releases the IP and removes the veth; it is idempotent.
	if err := n.Teardown(ctx, "pod1", nsPath); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ipam", "kbtest", ip)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("allocation of %s still present after teardown: %v", ip, err)
	}
	if links := linksOnBridge(t, node, bridge); len(links) != 1 {
		t.Errorf("links on %s after one teardown: %v, want pod2's veth only", bridge, links)
	}
	if _, err := readFrom(node.Path, fmt.Sprintf("127.0.0.1:%d", hostPort)); err == nil {
		t.Error("hostPort still answers after teardown")
	}
	if tr, err := node.Traces(bridge, cidr); err != nil || tr.HasRule(ip+":8080") || tr.HasRule(ip+"/32") {
		t.Errorf("pod1's rules left in the node's namespace after teardown: %s, %v", tr, err)
	}
	if err := n.Teardown(ctx, "pod1", nsPath); err != nil {
		t.Errorf("second teardown: %v", err)
	}
	if err := n.Teardown(ctx, "pod2", ns2); err != nil {
		t.Errorf("teardown: %v", err)
	}
	if links := linksOnBridge(t, node, bridge); len(links) != 0 {
		t.Errorf("links on %s after teardown: %v", bridge, links)
	}
	if err := RemoveNetNS(ns2); err != nil {
		t.Fatal(err)
	}
	if IsNetNS(ns2) {
		t.Errorf("%s still a namespace after RemoveNetNS", ns2)
	}
	if _, err := os.Stat(filepath.Join(dir, "ipam", "kbtest", ip2)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("allocation of %s still present after teardown: %v", ip2, err)
	}
	if err := RemoveNetNS(ns2); err != nil {
		t.Errorf("removing a removed namespace: %v", err)
	}
	// After a reboot the namespace's mount point is a plain file.
	plain := filepath.Join(dir, "netns", "plain")
	if err := os.WriteFile(plain, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := n.Teardown(ctx, "pod3", plain); err != nil {
		t.Errorf("teardown with a dead namespace's mount point: %v", err)
	}
	requireHostClean(t, bridge, cidr)
}

// TestIntegrationNodeNetNSGone: when the node's namespace has gone (and
// with it the bridge and the rules), Teardown still releases the pod's IP,
// without running the plugins in the host's namespace.
func TestIntegrationNodeNetNSGone(t *testing.T) {
	requireNetworkPrereqs(t)
	ctx := context.Background()
	dir := t.TempDir()
	bridge := fmt.Sprintf("kbg%d", os.Getpid()%100000)
	cidr := netip.MustParsePrefix("10.244.83.0/24")
	node := netns.New(t)
	t.Cleanup(func() { requireHostClean(t, bridge, cidr) })
	n, err := New(Config{PodCIDR: cidr.String(), BridgeName: bridge, NetworkName: "kbtest", Dir: dir, NetNS: node.Path})
	if err != nil {
		t.Fatal(err)
	}
	pod := filepath.Join(dir, "netns", "pod")
	if err := CreateNetNS(pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { RemoveNetNS(pod) })
	ip, err := n.Setup(ctx, "pod", pod, []runtime.PortMapping{{ContainerPort: 80, HostPort: 8080}})
	if err != nil {
		t.Fatal(err)
	}
	if err := RemoveNetNS(pod); err != nil {
		t.Fatal(err)
	}
	if err := node.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Setup(ctx, "pod2", pod, nil); !errors.Is(err, ErrNotNetNS) {
		t.Errorf("setup without the node's namespace: %v, want ErrNotNetNS", err)
	}
	if err := n.Teardown(ctx, "pod", pod); err != nil {
		t.Fatalf("teardown without the node's namespace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ipam", "kbtest", ip)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("allocation of %s still present after teardown: %v", ip, err)
	}
	requireHostClean(t, bridge, cidr)
}

func TestNewChecksTheNodeNetNS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"plain file": plain, "missing": filepath.Join(dir, "missing")} {
		_, err := New(Config{PodCIDR: "10.244.0.0/24", Dir: dir, NetNS: path})
		if !errors.Is(err, ErrNotNetNS) {
			t.Errorf("%s: %v, want ErrNotNetNS", name, err)
		}
	}
	if _, err := ConfList(Config{PodCIDR: "10.244.0.0/24", Dir: dir, NetNS: "run/netns/x"}); err == nil {
		t.Error("relative node namespace path: no error")
	}
}

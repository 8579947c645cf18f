package nft

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/proxy/rules"
	"github.com/kubebus/kubebus/test/harness/netns"
	"github.com/kubebus/kubebus/test/prereq"
)

// The real Service of BenchmarkFirstPacket: a ClusterIP outside cluster(n)'s
// 10.96.0.0/16 whose one endpoint is a TCP server in a pod namespace.
var (
	fpClusterIP = netip.AddrPortFrom(netip.MustParseAddr("10.97.0.10"), 80)
	fpPod       = netip.AddrPortFrom(netip.MustParseAddr("10.244.1.2"), 8080)
)

const fpName = "pod-a"

// BenchmarkFirstPacket measures the latency of a new TCP connection's
// handshake to a ClusterIP through the proxy's nftables rules, with n other
// Services (cluster(n), 5 endpoints each) in the ruleset besides the real
// one, which is added last.
//
// The client is a namespace of its own linked to the node namespace by a
// veth pair, like a pod: its SYN is translated in the node's prerouting
// hook and forwarded to the server's pod namespace. Each iteration opens a
// new socket on a thread moved into the client namespace and times a
// blocking connect, from its start until it returns (SYN, DNAT, SYN-ACK),
// then closes with SO_LINGER 0 (an RST, no TIME_WAIT). The server accepts,
// writes its name and closes. Besides ns/op (socket, connect and close),
// p50-us and p99-us are percentiles of the connect times alone.
//
// "direct" connects to the pod's address with no proxy table in the node
// namespace (so no nat hook nor conntrack there): the floor. Before each
// sub-benchmark's loop one connection reads the server's name through the
// address being timed, and after it the server must have accepted every
// timed connection.
func BenchmarkFirstPacket(b *testing.B) {
	if os.Geteuid() != 0 {
		prereq.Missing(b, "needs root to create network namespaces")
	}
	node, pod, client := netns.New(b), netns.New(b), netns.New(b)
	netns.Link(b, node, pod, "pa", "10.244.1.1", fpPod.Addr().String())
	netns.Link(b, node, client, "cl", "10.250.0.1", "10.250.0.2")
	if _, err := node.Exec("sysctl", "-qw", "net.ipv4.ip_forward=1"); err != nil {
		b.Fatal(err)
	}
	accepted := fpServe(b, pod, fpPod.String(), fpName)

	f, err := os.Open(node.Path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	a, err := New(Config{NetNSFd: int(f.Fd())})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()

	run := func(b *testing.B, to netip.AddrPort) {
		if name, err := fpRead(client, to); err != nil || name != fpName {
			b.Fatalf("connection to %s: got %q, %v; want %q", to, name, err, fpName)
		}
		before := accepted.Load()
		var ds []time.Duration
		err := client.Do(func() error {
			for b.Loop() {
				d, err := fpConnect(to)
				if err != nil {
					return fmt.Errorf("iteration %d: %w", len(ds), err)
				}
				ds = append(ds, d)
			}
			return nil
		})
		if err != nil {
			b.Fatalf("connect to %s: %v", to, err)
		}
		// The server accepts after the handshake; give it time to catch up.
		want := before + int64(len(ds))
		for deadline := time.Now().Add(10 * time.Second); accepted.Load() < want && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if got := accepted.Load(); got < want {
			b.Fatalf("server accepted %d of %d connections", got-before, len(ds))
		}
		slices.Sort(ds)
		b.ReportMetric(fpPercentile(ds, 50), "p50-us")
		b.ReportMetric(fpPercentile(ds, 99), "p99-us")
	}

	b.Run("direct", func(b *testing.B) {
		if err := a.Cleanup(ctx); err != nil {
			b.Fatal(err)
		}
		run(b, fpPod)
	})
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			in := cluster(n)
			fpAddService(&in)
			if err := a.Apply(ctx, rules.Build(in)); err != nil {
				b.Fatal(err)
			}
			run(b, fpClusterIP)
		})
	}
}

// fpAddService appends the real Service, fpClusterIP with the one endpoint
// fpPod, to in.
func fpAddService(in *rules.Input) {
	ip := fpClusterIP.Addr().String()
	p, tcp, name := int32(fpPod.Port()), corev1.ProtocolTCP, ""
	in.Services = append(in.Services, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "real"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: ip, ClusterIPs: []string{ip},
			Ports: []corev1.ServicePort{{Port: int32(fpClusterIP.Port()), Protocol: tcp}}},
	})
	in.EndpointSlices = append(in.EndpointSlices, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "real-1", Labels: map[string]string{discoveryv1.LabelServiceName: "real"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &p, Protocol: &tcp}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{fpPod.Addr().String()}}},
	})
}

// fpPercentile returns the q-th percentile of sorted ds in microseconds
// (nearest rank).
func fpPercentile(ds []time.Duration, q int) float64 {
	if len(ds) == 0 {
		return 0
	}
	i := (len(ds)*q+99)/100 - 1
	return float64(ds[max(i, 0)]) / float64(time.Microsecond)
}

// fpServe runs a TCP server on addr inside n that writes name to each
// connection and closes it; it returns the count of accepted connections.
func fpServe(tb testing.TB, n *netns.Node, addr, name string) *atomic.Int64 {
	tb.Helper()
	var l net.Listener
	if err := n.Do(func() (err error) { l, err = net.Listen("tcp", addr); return err }); err != nil {
		tb.Fatal(err)
	}
	var accepted atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Write([]byte(name)) // fails when the client has reset already
			c.Close()
		}
	}()
	tb.Cleanup(func() { l.Close(); <-done })
	return &accepted
}

// fpSocket opens a blocking TCP socket that resets on close and gives up
// connecting or reading after 5 s.
func fpSocket() (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	tv := unix.Timeval{Sec: 5}
	for _, err := range []error{
		unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0}),
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv),
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv),
	} {
		if err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("setsockopt: %w", err)
		}
	}
	return fd, nil
}

// fpConnect opens a new connection to to from the calling thread's
// namespace, returns how long connect took, and resets it.
func fpConnect(to netip.AddrPort) (time.Duration, error) {
	fd, err := fpSocket()
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	start := time.Now()
	err = fpDial(fd, to)
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	return d, nil
}

// fpDial connects fd to to. A connect interrupted by a signal goes on in
// the kernel (sockets with a send timeout are not restarted), so it then
// waits for the outcome.
func fpDial(fd int, to netip.AddrPort) error {
	err := unix.Connect(fd, &unix.SockaddrInet4{Addr: to.Addr().As4(), Port: int(to.Port())})
	for errors.Is(err, unix.EINTR) {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		var n int
		if n, err = unix.Poll(pfd, 5000); err == nil {
			if n == 0 {
				err = unix.ETIMEDOUT
			} else if errno, gerr := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); gerr != nil {
				err = gerr
			} else if errno != 0 {
				err = unix.Errno(errno)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("connect %s: %w", to, err)
	}
	return nil
}

// fpRead connects to to from inside n and returns what
// the server wrote before closing.
func fpRead(n *netns.Node, to netip.AddrPort) (string, error) {
	var got []byte
	err := n.Do(func() error {
		fd, err := fpSocket()
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := fpDial(fd, to); err != nil {
			return err
		}
		buf := make([]byte, 64)
		for {
			n, err := unix.Read(fd, buf)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				return fmt.Errorf("read: %w", err)
			}
			if n == 0 {
				return nil
			}
			got = append(got, buf[:n]...)
		}
	})
	return string(got), err
}

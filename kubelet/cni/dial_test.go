package cni

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	"github.com/kubebus/kubebus/test/harness/netns"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		network, addr string
		want          []string
	}{
		{"tcp", "10.1.2.3:80", []string{"10.1.2.3:80"}},
		{"tcp4", "127.0.0.1:8080", []string{"127.0.0.1:8080"}},
		{"udp6", "[fd00::1]:53", []string{"[fd00::1]:53"}},
		{"tcp", "[fe80::1%eth0]:1", []string{"[fe80::1%eth0]:1"}},
	} {
		got, err := resolve(ctx, tc.network, tc.addr)
		if err != nil {
			t.Errorf("resolve(%s, %s): %v", tc.network, tc.addr, err)
			continue
		}
		var s []string
		for _, a := range got {
			s = append(s, a.String())
		}
		if !reflect.DeepEqual(s, tc.want) {
			t.Errorf("resolve(%s, %s) = %v, want %v", tc.network, tc.addr, s, tc.want)
		}
	}
	for _, tc := range []struct{ network, addr string }{
		{"unix", "/run/x.sock"},
		{"ip", "10.0.0.1"},
		{"tcp", "10.0.0.1"},         // no port
		{"tcp", "10.0.0.1:70000"},   // port out of range
		{"tcp", "10.0.0.1:no-such"}, // unknown service
		{"tcp", "no-such-host.invalid:80"},
	} {
		if got, err := resolve(ctx, tc.network, tc.addr); err == nil {
			t.Errorf("resolve(%s, %s) = %v, want an error", tc.network, tc.addr, got)
		}
	}
}

// threadNetNS is the network namespace of the calling goroutine's thread.
func threadNetNS(t *testing.T) string {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	ns, err := os.Readlink("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func TestIntegrationDialer(t *testing.T) {
	requireNetworkPrereqs(t)
	hostNS := threadNetNS(t)
	node := netns.New(t)
	token := fmt.Sprintf("node namespace %s", node.Name)

	// A TCP server and a UDP echo on the node's loopback.
	var tl net.Listener
	var ul net.PacketConn
	if err := InNetNS(node.Path, func() error {
		var err error
		if tl, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return err
		}
		ul, err = net.ListenPacket("udp", "127.0.0.1:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close(); ul.Close() })
	go func() {
		for {
			c, err := tl.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, token)
			c.Close()
		}
	}()
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := ul.ReadFrom(buf)
			if err != nil {
				return
			}
			ul.WriteTo(buf[:n], from)
		}
	}()
	tcpPort := tl.Addr().(*net.TCPAddr).Port
	udpPort := ul.LocalAddr().(*net.UDPAddr).Port
	dial := Dialer(node.Path)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	read := func(dial func(context.Context, string, string) (net.Conn, error), network, addr string) (string, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return "", err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		return string(b), err
	}
	for _, tc := range []struct{ network, addr string }{
		{"tcp", fmt.Sprintf("127.0.0.1:%d", tcpPort)},
		{"tcp4", fmt.Sprintf("localhost:%d", tcpPort)}, // resolved by the host's /etc/hosts
	} {
		if got, err := read(dial, tc.network, tc.addr); err != nil || got != token {
			t.Errorf("dial %s %s in the node's namespace: %q, %v", tc.network, tc.addr, got, err)
		}
	}
	// The same address from the host's namespace is another loopback.
	if got, _ := read(Dialer(""), "tcp", fmt.Sprintf("127.0.0.1:%d", tcpPort)); got == token {
		t.Error("the host's 127.0.0.1 reaches the node's server: the namespaces are not separate")
	}

	c, err := dial(ctx, "udp", fmt.Sprintf("127.0.0.1:%d", udpPort))
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "ping" {
		t.Errorf("UDP echo in the node's namespace: %q, %v", buf[:n], err)
	}
	c.Close()

	// Concurrent dials; no thread goes back to the pool inside the node's
	// namespace.
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, err := read(dial, "tcp", fmt.Sprintf("127.0.0.1:%d", tcpPort)); err != nil || got != token {
				errs <- fmt.Errorf("%q, %v", got, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent dial: %v", err)
	}
	for range 50 {
		if ns := threadNetNS(t); ns != hostNS {
			t.Fatalf("a thread of the pool is in %s, not the host's %s", ns, hostNS)
		}
	}

	// Errors.
	if _, err := dial(ctx, "tcp", "127.0.0.1:1"); err == nil {
		t.Error("dialing a closed port: no error")
	}
	if _, err := Dialer(filepath.Join(t.TempDir(), "none"))(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", tcpPort)); !errors.Is(err, ErrNotNetNS) {
		t.Errorf("dialing from a missing namespace: %v, want ErrNotNetNS", err)
	}
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	if _, err := dial(cctx, "tcp", fmt.Sprintf("127.0.0.1:%d", tcpPort)); !errors.Is(err, context.Canceled) {
		t.Errorf("dialing with a cancelled context: %v", err)
	}
	if _, err := dial(ctx, "unix", "/run/x.sock"); err == nil {
		t.Error("dialing a unix socket: no error")
	}
}

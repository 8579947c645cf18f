// Package apiforward makes the API server reachable from pods on a node
// whose pod network lives in a network namespace of its own (the
// all-in-one's `--node-netns`): it gives the namespace's loopback device
// the API server's advertised address and forwards the TCP connections
// made to it to the API server's listener in the host namespace. The
// `kubernetes` Service's endpoints name that address, so a pod's traffic to
// the Service's cluster IP is DNATed by the proxy to the forwarder.
package apiforward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os/exec"
	"sync"
	"time"

	"github.com/kubebus/kubebus/kubelet/cni"
)

// Config says what to forward where.
type Config struct {
	// NetNS is the path of the node's network namespace.
	NetNS string
	// Address is the address:port to listen on inside it (added to its
	// loopback device as a /32 or /128 when missing).
	Address string
	// Target is the API server's address:port in the host namespace.
	Target string
	Logger *slog.Logger
}

func (c *Config) validate() error {
	ap, err := netip.ParseAddrPort(c.Address)
	if err != nil {
		return fmt.Errorf("apiforward: address %q: %w", c.Address, err)
	}
	if ap.Addr().IsLoopback() || ap.Addr().IsUnspecified() {
		return fmt.Errorf("apiforward: address %s must be a unicast address pods can be sent to", ap.Addr())
	}
	if c.NetNS == "" || c.Target == "" {
		return errors.New("apiforward: NetNS and Target are required")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Run forwards until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	ln, err := listen(cfg.NetNS, cfg.Address)
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); ln.Close() }()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("apiforward: accepting: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			forward(ctx, c, cfg.Target, cfg.Logger)
		}()
	}
}

// listen adds the address to the namespace's loopback device and opens
// the listening socket in that namespace.
func listen(netns, address string) (net.Listener, error) {
	ap := netip.MustParseAddrPort(address)
	bits := 32
	if ap.Addr().Is6() {
		bits = 128
	}
	var ln net.Listener
	err := cni.InNetNS(netns, func() error {
		out, err := exec.Command("ip", "addr", "replace", fmt.Sprintf("%s/%d", ap.Addr(), bits), "dev", "lo").CombinedOutput()
		if err != nil {
			return fmt.Errorf("apiforward: adding %s to the node namespace's loopback: %v: %s", ap.Addr(), err, out)
		}
		ln, err = net.Listen("tcp", address)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("apiforward: listening on %s in %s: %w", address, netns, err)
	}
	return ln, nil
}

// forward copies one connection to the target and back.
func forward(ctx context.Context, c net.Conn, target string, log *slog.Logger) {
	defer c.Close()
	d := net.Dialer{Timeout: 10 * time.Second}
	up, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		log.Warn("apiforward: dialing the API server", "target", target, "err", err)
		return
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { c.Close(); up.Close() })
	defer stop()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); closeWrite(up); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); closeWrite(c); done <- struct{}{} }()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if t, ok := c.(*net.TCPConn); ok {
		_ = t.CloseWrite()
	}
}

package cni

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// Dialer returns a dial function whose connections start inside the
// network namespace at netnsPath: each socket is created on an OS thread
// that has joined the namespace, so it belongs there (routes, addresses,
// 127.0.0.1 and packet rules are the namespace's) wherever it is used
// afterwards. The kubelet's probes use it to reach pods from the node's
// network namespace (Config.NetNS); tests use it to reach pod IPs and
// hostPorts. An empty netnsPath dials from the caller's namespace.
//
// network is "tcp", "tcp4", "tcp6", "udp", "udp4" or "udp6". A host name in
// addr is resolved in the caller's namespace, before entering the node's;
// each of its addresses is tried in turn. The function is safe for
// concurrent use; it honours ctx's deadline and cancellation.
func Dialer(netnsPath string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		if netnsPath == "" {
			return d.DialContext(ctx, network, addr)
		}
		addrs, err := resolve(ctx, network, addr)
		if err != nil {
			return nil, fmt.Errorf("cni: dialing %s %s in network namespace %s: %w", network, addr, netnsPath, err)
		}
		var errs []error
		for _, a := range addrs {
			var c net.Conn
			err := InNetNS(netnsPath, func() error {
				// One literal address: net.Dialer creates the socket on
				// this goroutine, so on the thread in the namespace.
				var err error
				c, err = d.DialContext(ctx, network, a.String())
				return err
			})
			if err == nil {
				return c, nil
			}
			errs = append(errs, err)
			if ctx.Err() != nil || errors.Is(err, ErrNotNetNS) {
				break
			}
		}
		return nil, fmt.Errorf("cni: dialing %s %s in network namespace %s: %w", network, addr, netnsPath, errors.Join(errs...))
	}
}

// resolve turns addr into literal addresses of network's family.
func resolve(ctx context.Context, network, addr string) ([]netip.AddrPort, error) {
	var family string
	switch network {
	case "tcp", "udp":
		family = "ip"
	case "tcp4", "udp4":
		family = "ip4"
	case "tcp6", "udp6":
		family = "ip6"
	default:
		return nil, fmt.Errorf("unsupported network %q (want tcp, tcp4, tcp6, udp, udp4 or udp6)", network)
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		p, lerr := net.DefaultResolver.LookupPort(ctx, network, portStr)
		if lerr != nil {
			return nil, fmt.Errorf("invalid port %q: %w", portStr, lerr)
		}
		port = uint64(p)
	}
	if host == "" {
		// As net.Dial: the local system.
		host = "localhost"
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.AddrPort{netip.AddrPortFrom(ip, uint16(port))}, nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, family, host)
	if err != nil {
		return nil, err
	}
	out := make([]netip.AddrPort, 0, len(ips))
	for _, ip := range ips {
		out = append(out, netip.AddrPortFrom(ip.Unmap(), uint16(port)))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s address for %q", family, host)
	}
	return out, nil
}

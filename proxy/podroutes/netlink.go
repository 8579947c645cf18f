package podroutes

import (
	"context"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
)

// Protocol tags the routes this package adds in the kernel's table
// (rtm_protocol), so that Apply removes only its own.
const Protocol = netlink.RouteProtocol(0x4b)

// Netlink applies routes to the main table of the calling process's
// network namespace.
type Netlink struct{}

// Apply replaces the tagged routes with routes: a route to every Dst
// through Via, and none of its own beside them.
func (Netlink) Apply(_ context.Context, routes []Route) error {
	want := map[string]bool{}
	for _, r := range routes {
		dst := &net.IPNet{IP: r.Dst.Addr().AsSlice(), Mask: net.CIDRMask(r.Dst.Bits(), r.Dst.Addr().BitLen())}
		nr := &netlink.Route{Dst: dst, Gw: r.Via.AsSlice(), Protocol: Protocol}
		if err := netlink.RouteReplace(nr); err != nil {
			return fmt.Errorf("route %s: %w", r, err)
		}
		want[dst.String()] = true
	}
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		have, err := netlink.RouteListFiltered(family, &netlink.Route{Protocol: Protocol}, netlink.RT_FILTER_PROTOCOL)
		if err != nil {
			return fmt.Errorf("listing routes: %w", err)
		}
		for _, h := range have {
			if h.Dst != nil && !want[h.Dst.String()] {
				if err := netlink.RouteDel(&h); err != nil {
					return fmt.Errorf("removing route %s: %w", h.Dst, err)
				}
			}
		}
	}
	return nil
}

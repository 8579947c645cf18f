package podroutes

import (
	"context"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// inNetNS runs fn on a locked thread inside a new network namespace of
// the test's own.
func inNetNS(t *testing.T, fn func()) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Fatal("the netlink test needs root (a network namespace of its own)")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // the thread is thrown away: never unlocked
		orig, err := netns.Get()
		if err != nil {
			t.Error(err)
			return
		}
		defer orig.Close()
		ns, err := netns.New()
		if err != nil {
			t.Error(err)
			return
		}
		defer ns.Close()
		fn()
	}()
	<-done
}

func TestIntegrationNetlinkApply(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a network namespace")
	}
	inNetNS(t, func() {
		link := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "podnet0"}}
		if err := netlink.LinkAdd(link); err != nil {
			t.Error(err)
			return
		}
		addr, _ := netlink.ParseAddr("172.30.0.1/24")
		if err := netlink.AddrAdd(link, addr); err != nil {
			t.Error(err)
			return
		}
		if err := netlink.LinkSetUp(link); err != nil {
			t.Error(err)
			return
		}
		// A route someone else made: Apply leaves it alone.
		_, other, _ := net.ParseCIDR("10.98.0.0/24")
		if err := netlink.RouteAdd(&netlink.Route{Dst: other, Gw: net.ParseIP("172.30.0.9")}); err != nil {
			t.Error(err)
			return
		}
		routes := func() []string {
			rs, err := netlink.RouteList(nil, netlink.FAMILY_V4)
			if err != nil {
				t.Error(err)
			}
			var out []string
			for _, r := range rs {
				if r.Dst != nil && r.Gw != nil {
					tag := ""
					if r.Protocol == Protocol {
						tag = " (ours)"
					}
					out = append(out, r.Dst.String()+" via "+r.Gw.String()+tag)
				}
			}
			slices.Sort(out)
			return out
		}
		r := func(dst, via string) Route {
			return Route{Dst: netip.MustParsePrefix(dst), Via: netip.MustParseAddr(via)}
		}
		ctx := context.Background()
		if err := (Netlink{}).Apply(ctx, []Route{r("10.244.1.0/24", "172.30.0.2"), r("10.244.2.0/24", "172.30.0.3")}); err != nil {
			t.Error(err)
			return
		}
		want := []string{"10.244.1.0/24 via 172.30.0.2 (ours)", "10.244.2.0/24 via 172.30.0.3 (ours)", "10.98.0.0/24 via 172.30.0.9"}
		if got := routes(); !slices.Equal(got, want) {
			t.Errorf("after the first Apply: %q, want %q", got, want)
		}
		// A node moved and one left: its route goes, the other is replaced.
		if err := (Netlink{}).Apply(ctx, []Route{r("10.244.1.0/24", "172.30.0.4")}); err != nil {
			t.Error(err)
			return
		}
		want = []string{"10.244.1.0/24 via 172.30.0.4 (ours)", "10.98.0.0/24 via 172.30.0.9"}
		if got := routes(); !slices.Equal(got, want) {
			t.Errorf("after the second Apply: %q, want %q", got, want)
		}
		if err := (Netlink{}).Apply(ctx, nil); err != nil {
			t.Error(err)
			return
		}
		want = []string{"10.98.0.0/24 via 172.30.0.9"}
		if got := routes(); !slices.Equal(got, want) {
			t.Errorf("after applying none: %q, want %q", got, want)
		}
	})
}

package nft

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kubebus/kubebus/proxy/rules"
	"github.com/kubebus/kubebus/test/harness/netns"
)

// listing returns `nft list table` of the proxy's table in n as blocks by
// their header line; lines inside map and set blocks are sorted (the kernel
// lists hash elements in no fixed order), chain blocks keep their order.
func listing(t *testing.T, n *netns.Node) map[string]string {
	t.Helper()
	out, err := n.Exec("nft", "list", "table", "ip", rules.Table)
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]string{}
	var head string
	var body []string
	flush := func() {
		if head == "" {
			return
		}
		if !strings.Contains(head, "chain ") {
			slices.Sort(body)
		}
		blocks[head] = strings.Join(body, "\n")
	}
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "\t") && !strings.HasPrefix(l, "\t\t") && strings.HasSuffix(l, "{"):
			flush()
			head, body = l, nil
		case strings.HasPrefix(l, "\t\t"):
			body = append(body, strings.TrimRight(strings.TrimSpace(l), ","))
		}
	}
	flush()
	return blocks
}

func countGotos(block string) int { return strings.Count(block, ": goto ") }

// TestIntegrationLargeTableDiffEqualsFull programs 1,000 Services, changes
// one by a diff, and checks that the kernel then holds exactly what a full
// rebuild of the same ruleset (a restarted proxy) writes.
func TestIntegrationLargeTableDiffEqualsFull(t *testing.T) {
	needRoot(t)
	n := netns.New(t)
	f, err := os.Open(n.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := New(Config{NetNSFd: int(f.Fd())})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	in := cluster(1000)
	if err := a.Apply(ctx, rules.Build(in)); err != nil {
		t.Fatal(err)
	}
	full := listing(t, n)
	if got := countGotos(full["\tmap "+rules.MapServiceIPs+" {"]); got != 1000 {
		t.Fatalf("service-ips holds %d elements, want 1000", got)
	}

	// One Service loses its endpoints, another gets a new one, one goes.
	c := in.EndpointSlices[10].DeepCopy()
	c.Endpoints = nil
	in.EndpointSlices[10] = c
	c = in.EndpointSlices[20].DeepCopy()
	c.Endpoints[0].Addresses = []string{"10.200.0.1"}
	in.EndpointSlices[20] = c
	in.Services = slices.Delete(in.Services, 30, 31)
	rs := rules.Build(in)
	if err := a.Apply(ctx, rs); err != nil {
		t.Fatalf("diff apply: %v", err)
	}
	diffed := listing(t, n)
	if got := countGotos(diffed["\tmap "+rules.MapServiceIPs+" {"]); got != 998 {
		t.Errorf("after the diff service-ips holds %d elements, want 998", got)
	}
	if got := countGotos(diffed["\tmap "+rules.MapNoEndpointServices+" {"]); got != 1 {
		t.Errorf("after the diff no-endpoint-services holds %d elements, want 1", got)
	}

	a.tables[rules.IPv4].last = nil // what a restarted proxy does
	if err := a.Apply(ctx, rs); err != nil {
		t.Fatalf("full apply: %v", err)
	}
	rebuilt := listing(t, n)
	if len(rebuilt) != len(diffed) {
		t.Errorf("full rebuild has %d blocks, the diffed table %d", len(rebuilt), len(diffed))
	}
	bad := 0
	for h, b := range rebuilt {
		if diffed[h] != b && bad < 5 {
			bad++
			t.Errorf("block %q differs:\nfull:\n%s\ndiffed:\n%s", h, b, diffed[h])
		}
	}
	if bad == 0 && len(rebuilt) != len(rs.Chains)+len(rs.Maps)+len(rs.Sets)+1 { // +1: the hairpin set
		t.Errorf("table holds %d chains, maps and sets; the ruleset %d", len(rebuilt), len(rs.Chains)+len(rs.Maps)+len(rs.Sets)+1)
	}
}

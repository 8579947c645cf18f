package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
	"github.com/kubebus/kubebus/test/harness/netns"
)

// Addresses of the proxy testbed: two backends and a client, each in a
// network namespace of its own, linked by veth pairs to the node's
// namespace (where the proxy programs nftables), which routes between them.
const (
	proxyPodA     = "10.244.1.2"
	proxyPodB     = "10.244.2.2"
	proxyBackPort = 8080
)

// proxyBed is a server without controller-manager, a `kubebus proxy`
// process programming the node namespace, two HTTP backends answering
// "pod-a" and "pod-b", a client namespace, and the Service "web" whose
// EndpointSlice the test writes itself.
type proxyBed struct {
	s           *harness.Server
	cs          *kubernetes.Clientset
	node        *netns.Node
	client      *netns.Dialer
	proxy       *harness.Process
	metricsAddr string
	clusterIP   string
	slice       *discoveryv1.EndpointSlice // the last written "web-1"
}

func newProxyBed(t *testing.T) *proxyBed {
	t.Helper()
	harness.SkipShort(t)
	nodePath := harness.NodeNetNS(t)
	pb := &proxyBed{node: &netns.Node{Name: filepath.Base(nodePath), Path: nodePath}}
	podA, podB, client := netns.New(t), netns.New(t), netns.New(t)
	netns.Link(t, pb.node, podA, "pa", "10.244.1.1", proxyPodA)
	netns.Link(t, pb.node, podB, "pb", "10.244.2.1", proxyPodB)
	netns.Link(t, pb.node, client, "cl", "10.250.0.1", "10.250.0.2")
	if _, err := pb.node.Exec("sysctl", "-qw", "net.ipv4.ip_forward=1"); err != nil {
		t.Fatal(err)
	}
	podA.ServeHTTP(t, net.JoinHostPort(proxyPodA, strconv.Itoa(proxyBackPort)), "pod-a")
	podB.ServeHTTP(t, net.JoinHostPort(proxyPodB, strconv.Itoa(proxyBackPort)), "pod-b")
	pb.client = client.Dialer(t)

	pb.s = harness.StartServer(t, "", "--disable-controller-manager", noServiceAccounts)
	pb.cs = pb.s.Clientset(t)
	pb.metricsAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(harness.FreePort(t)))
	pb.proxy = harness.StartProcess(t, "proxy", "--kubeconfig", pb.s.Kubeconfig, "--nats-url", pb.s.BusURL(t), "--node-netns", nodePath,
		"--hostname-override", "proxy-traffic", "--metrics-bind-address", pb.metricsAddr)

	ctx := context.Background()
	svc, err := pb.cs.CoreV1().Services("default").Create(ctx, proxyService("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP == "" {
		t.Fatal("the Service got no cluster IP")
	}
	pb.clusterIP = svc.Spec.ClusterIP
	if pb.slice, err = pb.cs.DiscoveryV1().EndpointSlices("default").Create(ctx,
		proxySlice("web", proxyPodA, proxyPodB), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return pb
}

// addr is web's ClusterIP and port.
func (pb *proxyBed) addr() string { return net.JoinHostPort(pb.clusterIP, "80") }

// setReady writes web's EndpointSlice with pod-b's ready condition set to
// ready (pod-a stays ready) and returns when the update call returned.
func (pb *proxyBed) setReady(t *testing.T, ready bool) {
	t.Helper()
	s := pb.slice.DeepCopy()
	for i := range s.Endpoints {
		if s.Endpoints[i].Addresses[0] == proxyPodB {
			s.Endpoints[i].Conditions.Ready = &ready
		}
	}
	var err error
	if pb.slice, err = pb.cs.DiscoveryV1().EndpointSlices("default").Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating the EndpointSlice: %v", err)
	}
}

// nft lists the proxy's table inside the node namespace.
func (pb *proxyBed) nft(t *testing.T) string {
	t.Helper()
	out, err := pb.node.Exec("nft", "list", "table", "ip", "kubebus")
	if err != nil {
		t.Fatalf("listing the proxy's table: %v", err)
	}
	return out
}

// hits makes n requests to web on fresh connections and counts the answers.
func (pb *proxyBed) hits(n int) (map[string]int, error) {
	got := map[string]int{}
	for range n {
		body, err := pb.client.Get(pb.addr(), 5*time.Second)
		if err != nil {
			return got, err
		}
		got[body]++
	}
	return got, nil
}

// waitBoth waits until fresh connections to web reach both backends.
func (pb *proxyBed) waitBoth(t *testing.T) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, func() error {
		got, err := pb.hits(20)
		if err != nil {
			return err
		}
		if got["pod-a"] == 0 || got["pod-b"] == 0 || got["pod-a"]+got["pod-b"] != 20 {
			return fmt.Errorf("20 connections to %s: want both backends, got %v", pb.addr(), got)
		}
		return nil
	})
}

// TestIntegrationProxyUnreadyBackend: an endpoint whose ready condition
// turns false stops getting new connections through the ClusterIP, and
// gets them again once it is ready again.
func TestIntegrationProxyUnreadyBackend(t *testing.T) {
	pb := newProxyBed(t)
	pb.waitBoth(t)

	pb.setReady(t, false)
	updated := time.Now()
	deadline := updated.Add(30 * time.Second)
	var streak int
	var streakStart time.Time
	for streak < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("pod-b still got new connections 30s after it became unready")
		}
		start := time.Now()
		body, err := pb.client.Get(pb.addr(), 5*time.Second)
		switch {
		case err != nil:
			t.Fatalf("a new connection while pod-b became unready: %v", err)
		case body == "pod-a":
			if streak == 0 {
				streakStart = start
			}
			streak++
		case body == "pod-b":
			streak = 0
		default:
			t.Fatalf("unexpected answer %q", body)
		}
	}
	t.Logf("pod-b unready: the first of 20 consecutive connections to pod-a started %v after the update returned", streakStart.Sub(updated))
	if got, err := pb.hits(100); err != nil || got["pod-a"] != 100 {
		t.Fatalf("100 new connections after pod-b became unready: want all on pod-a, got %v (err %v)", got, err)
	}

	pb.setReady(t, true)
	pb.waitBoth(t)
}

// TestIntegrationProxyRestartKeepsTraffic: with 1,001 Services programmed,
// the proxy is killed (SIGKILL) and started again while a client keeps
// opening new connections to a Service and keeps one long-lived connection
// busy. No request fails, and the restarted proxy's first full sync writes
// the very table the first proxy had written.
func TestIntegrationProxyRestartKeepsTraffic(t *testing.T) {
	const bulk, perSlice, workers = 1000, 5, 8
	pb := newProxyBed(t)
	ctx := context.Background()

	// 1,000 more Services with five (unreachable) endpoints each.
	clusterIPs := []string{pb.clusterIP}
	endpoints := []string{proxyPodA, proxyPodB}
	var mu sync.Mutex
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= bulk {
					return
				}
				name := fmt.Sprintf("bulk-%04d", i)
				svc, err := pb.cs.CoreV1().Services("default").Create(ctx, proxyService(name), metav1.CreateOptions{})
				if err != nil {
					errc <- fmt.Errorf("creating Service %s: %w", name, err)
					return
				}
				var addrs []string
				for e := range perSlice {
					addrs = append(addrs, fmt.Sprintf("10.%d.%d.%d", 100+e, i/256, i%256))
				}
				if _, err := pb.cs.DiscoveryV1().EndpointSlices("default").Create(ctx, proxySlice(name, addrs...), metav1.CreateOptions{}); err != nil {
					errc <- fmt.Errorf("creating EndpointSlice %s: %w", name, err)
					return
				}
				mu.Lock()
				clusterIPs = append(clusterIPs, svc.Spec.ClusterIP)
				endpoints = append(endpoints, addrs...)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}

	// Programmed: every ClusterIP and every endpoint address is in the
	// table (whatever chains, maps or verdicts carry them).
	harness.Eventually(t, 2*time.Minute, func() error {
		listed := proxyAddrTokens(pb.nft(t))
		for _, want := range [][]string{clusterIPs, endpoints} {
			missing := 0
			for _, a := range want {
				if !listed[a] {
					missing++
				}
			}
			if missing > 0 {
				return fmt.Errorf("%d of %d addresses (e.g. %s) not programmed yet", missing, len(want), want[0])
			}
		}
		return nil
	})
	pb.waitBoth(t)
	// The proxy syncs again only on a change or every 30s; either way the
	// table holds the same, so it does not matter when the snapshot is taken.
	before := pb.nft(t)

	// Traffic: a new connection every 10ms, and one long-lived connection
	// with a request every 50ms.
	tr := &proxyTraffic{}
	stop := make(chan struct{})
	var tw sync.WaitGroup
	tw.Add(2)
	go func() { defer tw.Done(); tr.fresh(pb, stop) }()
	var dials atomic.Int64
	go func() { defer tw.Done(); tr.keepAlive(pb, &dials, stop) }()
	stopped := false
	stopTraffic := func() {
		if !stopped {
			stopped = true
			close(stop)
			tw.Wait()
		}
	}
	defer stopTraffic()
	harness.Eventually(t, 30*time.Second, func() error {
		if f, k := tr.freshOK.Load(), tr.keepOK.Load(); f < 20 || k < 5 {
			return fmt.Errorf("traffic not flowing yet: %d new connections and %d keep-alive requests answered; failures %v", f, k, tr.failures())
		}
		return nil
	})

	pb.proxy.Kill()
	killed := time.Now()
	freshAtKill, keepAtKill := tr.freshOK.Load(), tr.keepOK.Load()
	pb.proxy.Start(t)
	// The first full sync of the new process: its rules-sync histogram
	// counts one.
	harness.Eventually(t, 2*time.Minute, func() error {
		n, err := proxySyncCount(pb.metricsAddr)
		if err != nil {
			return err
		}
		if n < 1 {
			return fmt.Errorf("the restarted proxy has not synced yet")
		}
		return nil
	})
	synced := time.Now()
	after := pb.nft(t)
	freshAtSync, keepAtSync := tr.freshOK.Load(), tr.keepOK.Load()
	// Traffic goes on under the restarted proxy's rules for a while.
	harness.Eventually(t, 30*time.Second, func() error {
		if f, k := tr.freshOK.Load()-freshAtSync, tr.keepOK.Load()-keepAtSync; f < 20 || k < 5 {
			return fmt.Errorf("%d new connections and %d keep-alive requests answered since the first sync", f, k)
		}
		return nil
	})
	stopTraffic()

	t.Logf("restart: first sync %v after the kill; answered before kill / until first sync / after: new connections %d/%d/%d, keep-alive %d/%d/%d",
		synced.Sub(killed), freshAtKill, freshAtSync-freshAtKill, tr.freshOK.Load()-freshAtSync,
		keepAtKill, keepAtSync-keepAtKill, tr.keepOK.Load()-keepAtSync)
	if f := tr.failures(); len(f) > 0 {
		t.Errorf("%d requests failed across the proxy restart, e.g. %v", len(f), f[:min(len(f), 10)])
	}
	if tr.freshOK.Load()-freshAtSync < 20 || tr.keepOK.Load()-keepAtSync < 5 {
		t.Errorf("too little traffic answered after the restarted proxy's first sync: %d new connections, %d keep-alive requests",
			tr.freshOK.Load()-freshAtSync, tr.keepOK.Load()-keepAtSync)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("the keep-alive client made %d connections, want 1 long-lived one", n)
	}
	// nft lists a table's chains, maps and sets in the order the kernel
	// got them: the first proxy added Services' chains over several syncs
	// as the Services arrived, the restarted one wrote the whole table in
	// one transaction, so the same blocks may come in another order. That
	// order carries no meaning; everything else (rules in their order, map
	// and set elements, which nft prints sorted) must be equal.
	if proxyCanonicalTable(before) != proxyCanonicalTable(after) {
		t.Errorf("the restarted proxy's table differs from the first one's:\n%s", proxyLineDiff(before, after))
	}
}

// proxyTraffic counts answered requests and records failures.
type proxyTraffic struct {
	freshOK, keepOK atomic.Int64
	mu              sync.Mutex
	failed          []string
}

func (tr *proxyTraffic) fail(kind string, err error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.failed = append(tr.failed, fmt.Sprintf("%s %s: %v", time.Now().Format("15:04:05.000"), kind, err))
}

func (tr *proxyTraffic) failures() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.failed...)
}

// fresh makes a request on a new connection every 10ms until stop.
func (tr *proxyTraffic) fresh(pb *proxyBed, stop <-chan struct{}) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		body, err := pb.client.Get(pb.addr(), 2*time.Second)
		if err == nil && body != "pod-a" && body != "pod-b" {
			err = fmt.Errorf("unexpected answer %q", body)
		}
		if err != nil {
			tr.fail("new connection", err)
			continue
		}
		tr.freshOK.Add(1)
	}
}

// keepAlive makes a request every 50ms on one kept-alive connection until
// stop, counting the connections it dials.
func (tr *proxyTraffic) keepAlive(pb *proxyBed, dials *atomic.Int64, stop <-chan struct{}) {
	tp := &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			dials.Add(1)
			return pb.client.Dial(ctx, addr, 2*time.Second)
		},
		MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, IdleConnTimeout: time.Minute,
	}
	defer tp.CloseIdleConnections()
	c := &http.Client{Transport: tp, Timeout: 2 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		err := func() error {
			resp, err := c.Get("http://" + pb.addr() + "/")
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK || (string(b) != "pod-a" && string(b) != "pod-b") {
				return fmt.Errorf("unexpected answer %d %q", resp.StatusCode, b)
			}
			return nil
		}()
		if err != nil {
			tr.fail("keep-alive", err)
			continue
		}
		tr.keepOK.Add(1)
	}
}

// proxySyncCount reads kubeproxy_sync_proxy_rules_duration_seconds_count
// from the proxy's metrics endpoint.
func proxySyncCount(addr string) (int, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "kubeproxy_sync_proxy_rules_duration_seconds_count "); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no kubeproxy_sync_proxy_rules_duration_seconds_count in %s/metrics", addr)
}

// proxyAddrTokens returns the dotted-quad-looking tokens of an nft listing.
func proxyAddrTokens(listing string) map[string]bool {
	out := map[string]bool{}
	for _, tok := range strings.FieldsFunc(listing, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.') }) {
		if net.ParseIP(tok) != nil {
			out[tok] = true
		}
	}
	return out
}

// proxyCanonicalTable puts the top-level blocks of an `nft list table`
// listing (chains, maps, sets: from a line "\t... {" to the line "\t}") in
// sorted order, keeping each block's text as it is.
func proxyCanonicalTable(listing string) string {
	var blocks, cur, other []string
	for _, l := range strings.Split(listing, "\n") {
		switch {
		case cur != nil:
			cur = append(cur, l)
			if l == "\t}" {
				blocks = append(blocks, strings.Join(cur, "\n"))
				cur = nil
			}
		case strings.HasPrefix(l, "\t") && strings.HasSuffix(l, "{"):
			cur = []string{l}
		case strings.TrimSpace(l) != "":
			other = append(other, l)
		}
	}
	if cur != nil {
		blocks = append(blocks, strings.Join(cur, "\n"))
	}
	slices.Sort(blocks)
	return strings.Join(other, "\n") + "\n" + strings.Join(blocks, "\n")
}

// proxyLineDiff shows the lines only one of two listings has (at most 40).
func proxyLineDiff(a, b string) string {
	count := map[string]int{}
	for _, l := range strings.Split(a, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(b, "\n") {
		count[l]--
	}
	var out []string
	for l, n := range count {
		switch {
		case n > 0:
			out = append(out, "- "+l)
		case n < 0:
			out = append(out, "+ "+l)
		}
	}
	if len(out) == 0 {
		return "(the same lines in another order)"
	}
	return strings.Join(out[:min(len(out), 40)], "\n")
}

func proxyService(name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(proxyBackPort), Protocol: corev1.ProtocolTCP}},
	}}
}

// proxySlice is an EndpointSlice of the Service name with ready endpoints
// at addrs.
func proxySlice(name string, addrs ...string) *discoveryv1.EndpointSlice {
	port, pname, proto := int32(proxyBackPort), "http", corev1.ProtocolTCP
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &pname, Port: &port, Protocol: &proto}},
	}
	for _, a := range addrs {
		ready := true
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
	}
	return s
}

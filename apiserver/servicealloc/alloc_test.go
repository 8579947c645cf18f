package servicealloc

import (
	"context"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/apiserver/storage"
)

// fakeStore is an in-memory Reader that can apply a Side as the API
// server's transaction would.
type fakeStore struct {
	mu    sync.Mutex
	kv    map[string]string
	lists int
}

func newFakeStore() *fakeStore { return &fakeStore{kv: map[string]string{}} }

func (f *fakeStore) Get(_ context.Context, key string) (storage.KV, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.kv[key]
	if !ok {
		return storage.KV{}, storage.ErrNotFound
	}
	return storage.KV{Key: key, Value: []byte(v)}, nil
}

func (f *fakeStore) List(_ context.Context, prefix, startKey string, _, limit int64) (storage.Page, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	var keys []string
	for k := range f.kv {
		if strings.HasPrefix(k, prefix) && k >= startKey {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	p := storage.Page{}
	if limit > 0 && int64(len(keys)) > limit {
		keys, p.More = keys[:limit], true
	}
	for _, k := range keys {
		p.KVs = append(p.KVs, storage.KV{Key: k, Value: []byte(f.kv[k])})
	}
	return p, nil
}

// commit applies side as a transaction: all claims must be free.
func (f *fakeStore) commit(t *testing.T, side storage.Side) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range side.Claim {
		if _, ok := f.kv[c.Key]; ok {
			t.Fatalf("claim of taken key %s", c.Key)
		}
	}
	for _, c := range side.Claim {
		f.kv[c.Key] = string(c.Value)
	}
	for _, r := range side.Release {
		if f.kv[r.Key] == string(r.Value) {
			delete(f.kv, r.Key)
		}
	}
}

func newAllocator(t *testing.T, store *fakeStore, ipRange, ports string, rnd func(uint64) uint64) *Allocator {
	t.Helper()
	a, err := New(Config{Store: store, ClusterIPRange: ipRange, NodePortRange: ports, Rand: rnd})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func svc(name string, typ corev1.ServiceType, ports ...corev1.ServicePort) *corev1.Service {
	policy := corev1.IPFamilyPolicySingleStack
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       corev1.ServiceSpec{Type: typ, Ports: ports, Selector: map[string]string{"app": name}, IPFamilyPolicy: &policy},
	}
}

func tcp(port, nodePort int32) corev1.ServicePort {
	return corev1.ServicePort{Name: "p" + string(rune('a'+port%26)), Port: port, NodePort: nodePort, Protocol: corev1.ProtocolTCP}
}

func wantInvalid(t *testing.T, err error, contains string) {
	t.Helper()
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), contains) {
		t.Fatalf("error = %v, want a 422 containing %q", err, contains)
	}
}

func TestAllocateClusterIPFillsFields(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	a := newAllocator(t, store, "10.0.0.0/24", "", nil)
	s := svc("web", corev1.ServiceTypeClusterIP, tcp(80, 0))
	side, err := a.AllocateService(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := netip.ParseAddr(s.Spec.ClusterIP)
	if err != nil {
		t.Fatalf("clusterIP %q: %v", s.Spec.ClusterIP, err)
	}
	if off, ok := a.IPRange().Offset(addr); !ok || off == 1 {
		t.Errorf("clusterIP %s: offset %d, in range %v; want in range and not the reserved .1", addr, off, ok)
	}
	if len(s.Spec.ClusterIPs) != 1 || s.Spec.ClusterIPs[0] != s.Spec.ClusterIP {
		t.Errorf("clusterIPs = %v, want [%s]", s.Spec.ClusterIPs, s.Spec.ClusterIP)
	}
	if len(s.Spec.IPFamilies) != 1 || s.Spec.IPFamilies[0] != corev1.IPv4Protocol {
		t.Errorf("ipFamilies = %v, want [IPv4]", s.Spec.IPFamilies)
	}
	if len(side.Claim) != 1 || side.Claim[0].Key != ipKey(addr) || string(side.Claim[0].Value) != "uid-web" || len(side.Release) != 0 {
		t.Errorf("side = %+v, want one claim of %s for uid-web", side, ipKey(addr))
	}
	if s.Spec.Ports[0].NodePort != 0 {
		t.Errorf("a ClusterIP service got node port %d", s.Spec.Ports[0].NodePort)
	}
}

func TestAllocateHeadlessAndExternalNameTakeNothing(t *testing.T) {
	t.Parallel()
	a := newAllocator(t, newFakeStore(), "", "", nil)
	h := svc("headless", corev1.ServiceTypeClusterIP, tcp(80, 0))
	h.Spec.ClusterIP, h.Spec.ClusterIPs = corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
	side, err := a.AllocateService(context.Background(), h, nil)
	if err != nil || !side.Empty() || h.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("headless: side %+v, err %v, clusterIP %q; want nothing allocated", side, err, h.Spec.ClusterIP)
	}
	if len(h.Spec.IPFamilies) != 1 {
		t.Errorf("headless: ipFamilies = %v, want the cluster's family", h.Spec.IPFamilies)
	}
	// A headless service without a selector is RequireDualStack by default;
	// that is fine on a single-stack cluster.
	hn := svc("headless-noselector", corev1.ServiceTypeClusterIP)
	hn.Spec.Selector = nil
	hn.Spec.ClusterIP, hn.Spec.ClusterIPs = corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
	req := corev1.IPFamilyPolicyRequireDualStack
	hn.Spec.IPFamilyPolicy = &req
	if side, err := a.AllocateService(context.Background(), hn, nil); err != nil || !side.Empty() {
		t.Errorf("selectorless headless: side %+v, err %v", side, err)
	}
	e := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext", UID: "uid-ext"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}}
	side, err = a.AllocateService(context.Background(), e, nil)
	if err != nil || !side.Empty() || e.Spec.ClusterIP != "" || len(e.Spec.IPFamilies) != 0 {
		t.Errorf("ExternalName: side %+v, err %v, spec %+v; want nothing", side, err, e.Spec)
	}
}

func TestAllocateExplicitIP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newFakeStore()
	a := newAllocator(t, store, "10.96.0.0/12", "", nil)

	first := svc("first", corev1.ServiceTypeClusterIP, tcp(80, 0))
	first.Spec.ClusterIP, first.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}
	side, err := a.AllocateService(ctx, first, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(side.Claim) != 1 || side.Claim[0].Key != IPPrefix+"010.096.000.010" {
		t.Fatalf("side = %+v", side)
	}
	store.commit(t, side)

	second := svc("second", corev1.ServiceTypeClusterIP, tcp(80, 0))
	second.Spec.ClusterIP, second.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}
	_, err = a.AllocateService(ctx, second, nil)
	wantInvalid(t, err, `spec.clusterIPs: Invalid value: ["10.96.0.10"]: failed to allocate IP 10.96.0.10: provided IP is already allocated`)

	// The reserved first address may be asked for (the kubernetes Service).
	k := svc("kubernetes", corev1.ServiceTypeClusterIP, tcp(443, 0))
	k.Spec.ClusterIP, k.Spec.ClusterIPs = "10.96.0.1", []string{"10.96.0.1"}
	if _, err := a.AllocateService(ctx, k, nil); err != nil {
		t.Errorf("asking for the reserved address: %v", err)
	}

	for _, ip := range []string{"10.112.0.1", "10.96.0.0", "10.111.255.255", "192.168.0.1"} {
		s := svc("out", corev1.ServiceTypeClusterIP, tcp(80, 0))
		s.Spec.ClusterIP, s.Spec.ClusterIPs = ip, []string{ip}
		_, err := a.AllocateService(ctx, s, nil)
		wantInvalid(t, err, "failed to allocate IP "+ip+": provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/12")
	}

	// An update that keeps the address claims nothing again.
	upd := first.DeepCopy()
	upd.Labels = map[string]string{"x": "y"}
	side, err = a.AllocateService(ctx, upd, first)
	if err != nil || !side.Empty() {
		t.Errorf("unchanged update: side %+v, err %v; want nothing", side, err)
	}
}

func TestAllocateRejectsOtherFamilies(t *testing.T) {
	t.Parallel()
	a := newAllocator(t, newFakeStore(), "", "", nil)
	s := svc("v6", corev1.ServiceTypeClusterIP, tcp(80, 0))
	s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	_, err := a.AllocateService(context.Background(), s, nil)
	wantInvalid(t, err, "spec.ipFamilies[0]: Invalid value: \"IPv6\": not configured on this cluster")

	d := svc("dual", corev1.ServiceTypeClusterIP, tcp(80, 0))
	req := corev1.IPFamilyPolicyRequireDualStack
	d.Spec.IPFamilyPolicy = &req
	_, err = a.AllocateService(context.Background(), d, nil)
	wantInvalid(t, err, "this cluster is not configured for dual-stack services")
}

func TestAllocatePicksDistinctAndSkipsReserved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newFakeStore()
	// A /29 has usable offsets 1..6; offset 1 is reserved: five to give.
	a := newAllocator(t, store, "10.0.0.0/29", "", nil)
	seen := map[string]bool{}
	for i := range 5 {
		s := svc("s"+string(rune('a'+i)), corev1.ServiceTypeClusterIP, tcp(80, 0))
		side, err := a.AllocateService(ctx, s, nil)
		if err != nil {
			t.Fatalf("service %d: %v", i, err)
		}
		if seen[s.Spec.ClusterIP] || s.Spec.ClusterIP == "10.0.0.1" {
			t.Fatalf("service %d got %s again or the reserved address (had %v)", i, s.Spec.ClusterIP, seen)
		}
		seen[s.Spec.ClusterIP] = true
		store.commit(t, side)
	}
	_, err := a.AllocateService(ctx, svc("full", corev1.ServiceTypeClusterIP, tcp(80, 0)), nil)
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "range is full") {
		t.Errorf("sixth service: %v, want a 500 saying the range is full", err)
	}
}

func TestAllocateScanIsRandomAndBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newFakeStore()
	var start uint64
	a := newAllocator(t, store, "10.96.0.0/16", "", func(n uint64) uint64 { return start % n })
	// Claim 1000 addresses in a row from offset 100: a scan starting there
	// pages over them (four pages) and takes the first gap after.
	for off := uint64(100); off < 1100; off++ {
		store.kv[ipKey(a.ips.Addr(off))] = "someone"
	}
	start = 100 - 1 // rand result + lo (1) = offset 100
	s := svc("x", corev1.ServiceTypeClusterIP, tcp(80, 0))
	before := store.lists
	if _, err := a.AllocateService(ctx, s, nil); err != nil {
		t.Fatal(err)
	}
	if want := a.ips.Addr(1100).String(); s.Spec.ClusterIP != want {
		t.Errorf("clusterIP = %s, want %s, the first free address after the run", s.Spec.ClusterIP, want)
	}
	if reads := store.lists - before; reads < 4 || reads > maxReads {
		t.Errorf("scan read %d pages, want 4..%d", reads, maxReads)
	}
	// Different random starts give different addresses.
	start = 5000
	s2 := svc("y", corev1.ServiceTypeClusterIP, tcp(80, 0))
	if _, err := a.AllocateService(ctx, s2, nil); err != nil {
		t.Fatal(err)
	}
	if want := a.ips.Addr(5001).String(); s2.Spec.ClusterIP != want {
		t.Errorf("clusterIP = %s, want %s (random start)", s2.Spec.ClusterIP, want)
	}
	// A run longer than the scan bound fails instead of reading on.
	for off := uint64(1100); off < 1100+pageSize*maxReads; off++ {
		store.kv[ipKey(a.ips.Addr(off))] = "someone"
	}
	start = 99
	before = store.lists
	_, err := a.AllocateService(ctx, svc("z", corev1.ServiceTypeClusterIP, tcp(80, 0)), nil)
	if !apierrors.IsInternalError(err) || store.lists-before != maxReads {
		t.Errorf("long run: err %v after %d reads, want a 500 after %d", err, store.lists-before, maxReads)
	}
}

func TestAllocateNodePorts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newFakeStore()
	a := newAllocator(t, store, "", "30000-30009", nil)

	s := svc("np", corev1.ServiceTypeNodePort, tcp(80, 0), tcp(443, 30005))
	side, err := a.AllocateService(ctx, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	p0, p1 := s.Spec.Ports[0].NodePort, s.Spec.Ports[1].NodePort
	if p1 != 30005 || p0 < 30000 || p0 > 30009 || p0 == 30005 {
		t.Fatalf("node ports = %d, %d; want one picked in range and 30005", p0, p1)
	}
	if len(side.Claim) != 3 { // the IP and two ports
		t.Fatalf("claims = %+v, want 3", side.Claim)
	}
	store.commit(t, side)

	// Taken and out-of-range requests are 422s, as upstream.
	_, err = a.AllocateService(ctx, svc("dup", corev1.ServiceTypeNodePort, tcp(80, 30005)), nil)
	wantInvalid(t, err, "spec.ports[0].nodePort: Invalid value: 30005: provided port is already allocated")
	_, err = a.AllocateService(ctx, svc("far", corev1.ServiceTypeNodePort, tcp(80, 31000)), nil)
	wantInvalid(t, err, "spec.ports[0].nodePort: Invalid value: 31000: provided port is not in the valid range. The range of valid ports is 30000-30009")

	// One port number over TCP and UDP shares a node port.
	dns := svc("dns", corev1.ServiceTypeNodePort,
		corev1.ServicePort{Name: "tcp", Port: 53, Protocol: corev1.ProtocolTCP},
		corev1.ServicePort{Name: "udp", Port: 53, Protocol: corev1.ProtocolUDP})
	side, err = a.AllocateService(ctx, dns, nil)
	if err != nil {
		t.Fatal(err)
	}
	if dns.Spec.Ports[0].NodePort == 0 || dns.Spec.Ports[0].NodePort != dns.Spec.Ports[1].NodePort || len(side.Claim) != 2 {
		t.Fatalf("dns node ports %d/%d, claims %+v; want one shared port", dns.Spec.Ports[0].NodePort, dns.Spec.Ports[1].NodePort, side.Claim)
	}
	store.commit(t, side)

	// Update: drop port 443, keep 80: 30005 is released, nothing claimed.
	upd := s.DeepCopy()
	upd.Spec.Ports = upd.Spec.Ports[:1]
	side, err = a.AllocateService(ctx, upd, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(side.Claim) != 0 || len(side.Release) != 1 || side.Release[0].Key != portKey(30005) || string(side.Release[0].Value) != "uid-np" {
		t.Fatalf("port removal side = %+v, want the release of 30005", side)
	}
	store.commit(t, side)

	// Type change to ClusterIP (node ports dropped by the update's
	// preparation): every node port is released, the IP kept.
	toCIP := upd.DeepCopy()
	toCIP.Spec.Type = corev1.ServiceTypeClusterIP
	toCIP.Spec.Ports[0].NodePort = 0
	side, err = a.AllocateService(ctx, toCIP, upd)
	if err != nil {
		t.Fatal(err)
	}
	if len(side.Claim) != 0 || len(side.Release) != 1 || side.Release[0].Key != portKey(int(p0)) {
		t.Fatalf("type change side = %+v, want the release of %d", side, p0)
	}
	store.commit(t, side)

	// LoadBalancer without node ports respects explicit ones only.
	no := false
	lb := svc("lb", corev1.ServiceTypeLoadBalancer, tcp(80, 0))
	lb.Spec.AllocateLoadBalancerNodePorts = &no
	if side, err = a.AllocateService(ctx, lb, nil); err != nil || lb.Spec.Ports[0].NodePort != 0 || len(side.Claim) != 1 {
		t.Fatalf("LB without node ports: port %d, side %+v, err %v", lb.Spec.Ports[0].NodePort, side, err)
	}
	// LoadBalancer with externalTrafficPolicy Local gets a health check port.
	local := svc("local", corev1.ServiceTypeLoadBalancer, tcp(80, 0))
	local.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	if side, err = a.AllocateService(ctx, local, nil); err != nil {
		t.Fatal(err)
	}
	hc := local.Spec.HealthCheckNodePort
	if hc == 0 || hc == local.Spec.Ports[0].NodePort || !a.PortRange().Contains(int(hc)) || len(side.Claim) != 3 {
		t.Fatalf("health check port %d (node port %d), side %+v", hc, local.Spec.Ports[0].NodePort, side)
	}
}

func TestAllocateNodePortsUntilFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := newFakeStore()
	a := newAllocator(t, store, "", "30000-30004", nil)
	seen := map[int32]bool{}
	for i := range 5 {
		s := svc("s"+string(rune('a'+i)), corev1.ServiceTypeNodePort, tcp(80, 0))
		side, err := a.AllocateService(ctx, s, nil)
		if err != nil {
			t.Fatalf("service %d: %v", i, err)
		}
		if np := s.Spec.Ports[0].NodePort; seen[np] {
			t.Fatalf("node port %d given twice", np)
		}
		seen[s.Spec.Ports[0].NodePort] = true
		store.commit(t, side)
	}
	_, err := a.AllocateService(ctx, svc("full", corev1.ServiceTypeNodePort, tcp(80, 0)), nil)
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "node port: range is full") {
		t.Errorf("sixth: %v, want range is full", err)
	}
}

func TestReleaseService(t *testing.T) {
	t.Parallel()
	a := newAllocator(t, newFakeStore(), "", "", nil)
	s := svc("r", corev1.ServiceTypeLoadBalancer, tcp(80, 30080), tcp(81, 30081))
	s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.3.4", []string{"10.96.3.4"}
	s.Spec.HealthCheckNodePort = 30090
	side := a.ReleaseService(s)
	got := map[string]string{}
	for _, r := range side.Release {
		got[r.Key] = string(r.Value)
	}
	want := map[string]string{IPPrefix + "010.096.003.004": "uid-r", portKey(30080): "uid-r", portKey(30081): "uid-r", portKey(30090): "uid-r"}
	if len(side.Claim) != 0 || len(got) != len(want) || len(side.Release) != len(want) {
		t.Fatalf("release = %+v, want %v", side, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("release %s = %q, want %q", k, got[k], v)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{
		{},
		{Store: newFakeStore(), ClusterIPRange: "10.0.0.0/8"},
		{Store: newFakeStore(), NodePortRange: "40000-30000"},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) succeeded, want an error", c)
		}
	}
}

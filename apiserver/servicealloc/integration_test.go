package servicealloc_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebus/kubebus/apiserver"
	"github.com/kubebus/kubebus/apiserver/resource"
	"github.com/kubebus/kubebus/apiserver/servicealloc"
	"github.com/kubebus/kubebus/apiserver/storage"
	"github.com/kubebus/kubebus/test/harness"
)

const (
	testIPRange    = "10.200.0.0/22"
	testPortRange  = "30000-30999"
	testNamespace  = "default"
	servicesTotal  = 200
	creatorWorkers = 8
)

// replica is one API server on the shared etcd.
type replica struct {
	cs    kubernetes.Interface
	store *storage.Store
}

// startReplicas starts n API servers, each with its own etcd client and
// allocator, on one etcd.
func startReplicas(t *testing.T, n int) []replica {
	t.Helper()
	etcd := harness.StartEtcd(t)
	var out []replica
	for i := range n {
		store, err := storage.New(storage.Config{Endpoints: []string{etcd.Endpoint}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = store.Close() })
		alloc, err := servicealloc.New(servicealloc.Config{Store: store, ClusterIPRange: testIPRange, NodePortRange: testPortRange})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := apiserver.New(apiserver.Config{Store: store, Resources: resource.Builtin(), Logger: slog.New(slog.DiscardHandler),
			MaxMutatingRequestsInFlight: 1000, MaxRequestsInFlight: 1000,
			Allocators: map[schema.GroupResource]apiserver.Allocator{{Resource: "services"}: alloc}})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := srv.Bootstrap(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		hs := httptest.NewServer(srv.Handler())
		t.Cleanup(hs.Close)
		cs, err := kubernetes.NewForConfig(&rest.Config{Host: hs.URL, QPS: -1})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, replica{cs: cs, store: store})
	}
	return out
}

func service(name string, typ corev1.ServiceType, clusterIP string, ports ...corev1.ServicePort) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Type: typ, ClusterIP: clusterIP, Selector: map[string]string{"app": name}, Ports: ports}}
	if len(ports) == 0 {
		s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "https", Port: 443}}
	}
	return s
}

func requireInvalid(t *testing.T, err error, contains string) {
	t.Helper()
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), contains) {
		t.Fatalf("error = %v, want a 422 containing %q", err, contains)
	}
}

func count(t *testing.T, store *storage.Store, prefix string) int64 {
	t.Helper()
	n, err := store.Count(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestIntegrationServiceAllocation creates 200 Services from 8 goroutines
// spread over two API servers on one etcd, and checks that cluster IPs and
// node ports are distinct, in range, persistent, and freed on delete.
func TestIntegrationServiceAllocation(t *testing.T) {
	harness.SkipShort(t)
	ctx := context.Background()
	reps := startReplicas(t, 2)
	ipRange, err := servicealloc.ParseIPRange(testIPRange)
	if err != nil {
		t.Fatal(err)
	}
	portRange, err := servicealloc.ParsePortRange(testPortRange)
	if err != nil {
		t.Fatal(err)
	}

	// Every third service is a NodePort with two ports.
	var wg sync.WaitGroup
	errs := make(chan error, servicesTotal)
	for w := range creatorWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs := reps[w%len(reps)].cs
			for i := w; i < servicesTotal; i += creatorWorkers {
				typ := corev1.ServiceTypeClusterIP
				if i%3 == 0 {
					typ = corev1.ServiceTypeNodePort
				}
				if _, err := cs.CoreV1().Services(testNamespace).Create(ctx, service(fmt.Sprintf("svc-%03d", i), typ, ""), metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("creating svc-%03d: %w", i, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	list, err := reps[1].cs.CoreV1().Services(testNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != servicesTotal {
		t.Fatalf("%d services listed, want %d", len(list.Items), servicesTotal)
	}
	ips := map[string]string{}
	nodePorts := map[int32]string{}
	wantPorts := 0
	for _, s := range list.Items {
		addr, err := netip.ParseAddr(s.Spec.ClusterIP)
		if err != nil {
			t.Fatalf("%s: clusterIP %q: %v", s.Name, s.Spec.ClusterIP, err)
		}
		if _, ok := ipRange.Offset(addr); !ok || addr == ipRange.Reserved() {
			t.Errorf("%s: clusterIP %s outside %s or the reserved %s", s.Name, addr, testIPRange, ipRange.Reserved())
		}
		if other, dup := ips[s.Spec.ClusterIP]; dup {
			t.Errorf("clusterIP %s given to %s and %s", s.Spec.ClusterIP, other, s.Name)
		}
		ips[s.Spec.ClusterIP] = s.Name
		if len(s.Spec.ClusterIPs) != 1 || s.Spec.ClusterIPs[0] != s.Spec.ClusterIP ||
			len(s.Spec.IPFamilies) != 1 || s.Spec.IPFamilies[0] != corev1.IPv4Protocol ||
			s.Spec.IPFamilyPolicy == nil || *s.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
			t.Errorf("%s: clusterIPs %v, ipFamilies %v, ipFamilyPolicy %v; want [%s], [IPv4], SingleStack",
				s.Name, s.Spec.ClusterIPs, s.Spec.IPFamilies, s.Spec.IPFamilyPolicy, s.Spec.ClusterIP)
		}
		for _, p := range s.Spec.Ports {
			if s.Spec.Type != corev1.ServiceTypeNodePort {
				if p.NodePort != 0 {
					t.Errorf("%s: ClusterIP service got node port %d", s.Name, p.NodePort)
				}
				continue
			}
			wantPorts++
			if !portRange.Contains(int(p.NodePort)) {
				t.Errorf("%s: node port %d outside %s", s.Name, p.NodePort, testPortRange)
			}
			if other, dup := nodePorts[p.NodePort]; dup {
				t.Errorf("node port %d given to %s and %s", p.NodePort, other, s.Name)
			}
			nodePorts[p.NodePort] = s.Name
		}
	}
	if len(ips) != servicesTotal || len(nodePorts) != wantPorts {
		t.Fatalf("%d distinct IPs, %d distinct node ports; want %d and %d", len(ips), len(nodePorts), servicesTotal, wantPorts)
	}
	// One key per allocation, in etcd.
	if n := count(t, reps[0].store, servicealloc.IPPrefix); n != servicesTotal {
		t.Errorf("%d cluster IP keys in etcd, want %d", n, servicesTotal)
	}
	if n := count(t, reps[0].store, servicealloc.NodePortPrefix); n != int64(wantPorts) {
		t.Errorf("%d node port keys in etcd, want %d", n, wantPorts)
	}

	// Taken values asked for explicitly are 422s, on either server.
	victim, err := reps[0].cs.CoreV1().Services(testNamespace).Get(ctx, "svc-000", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	victimIP, victimPort := victim.Spec.ClusterIP, victim.Spec.Ports[0].NodePort
	_, err = reps[1].cs.CoreV1().Services(testNamespace).Create(ctx, service("want-ip", corev1.ServiceTypeClusterIP, victimIP), metav1.CreateOptions{})
	requireInvalid(t, err, "failed to allocate IP "+victimIP+": provided IP is already allocated")
	_, err = reps[1].cs.CoreV1().Services(testNamespace).Create(ctx, service("want-port", corev1.ServiceTypeNodePort, "",
		corev1.ServicePort{Port: 80, NodePort: victimPort}), metav1.CreateOptions{})
	requireInvalid(t, err, fmt.Sprintf("spec.ports[0].nodePort: Invalid value: %d: provided port is already allocated", victimPort))
	_, err = reps[1].cs.CoreV1().Services(testNamespace).Create(ctx, service("far-ip", corev1.ServiceTypeClusterIP, "10.96.0.50"), metav1.CreateOptions{})
	requireInvalid(t, err, "failed to allocate IP 10.96.0.50: provided IP is not in the valid range. The range of valid IPs is "+testIPRange)
	_, err = reps[1].cs.CoreV1().Services(testNamespace).Create(ctx, service("far-port", corev1.ServiceTypeNodePort, "",
		corev1.ServicePort{Port: 80, NodePort: 32000}), metav1.CreateOptions{})
	requireInvalid(t, err, "provided port is not in the valid range. The range of valid ports is "+testPortRange)

	// The cluster IP is immutable.
	changed := victim.DeepCopy()
	changed.Spec.ClusterIP, changed.Spec.ClusterIPs = "10.200.3.3", []string{"10.200.3.3"}
	_, err = reps[0].cs.CoreV1().Services(testNamespace).Update(ctx, changed, metav1.UpdateOptions{})
	requireInvalid(t, err, "may not change once set")

	// Deleting frees both; a re-create asking for them gets them.
	if err := reps[0].cs.CoreV1().Services(testNamespace).Delete(ctx, "svc-000", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := reps[1].cs.CoreV1().Services(testNamespace).Create(ctx, service("reuse", corev1.ServiceTypeNodePort, victimIP,
		corev1.ServicePort{Port: 80, NodePort: victimPort}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("re-creating with the freed IP %s and port %d: %v", victimIP, victimPort, err)
	}
	if again.Spec.ClusterIP != victimIP || again.Spec.Ports[0].NodePort != victimPort {
		t.Fatalf("re-create got %s/%d, want %s/%d", again.Spec.ClusterIP, again.Spec.Ports[0].NodePort, victimIP, victimPort)
	}
	// svc-000 had two node ports; reuse holds one.
	if n := count(t, reps[0].store, servicealloc.NodePortPrefix); n != int64(wantPorts-1) {
		t.Errorf("%d node port keys after delete and re-create, want %d", n, wantPorts-1)
	}

	// NodePort -> ClusterIP releases the node ports; back to NodePort
	// picks new ones.
	svc3, err := reps[0].cs.CoreV1().Services(testNamespace).Get(ctx, "svc-003", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := count(t, reps[0].store, servicealloc.NodePortPrefix)
	svc3.Spec.Type = corev1.ServiceTypeClusterIP
	for i := range svc3.Spec.Ports {
		svc3.Spec.Ports[i].NodePort = 0
	}
	svc3.Spec.ExternalTrafficPolicy = ""
	svc3, err = reps[0].cs.CoreV1().Services(testNamespace).Update(ctx, svc3, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, reps[0].store, servicealloc.NodePortPrefix); n != before-2 {
		t.Errorf("%d node port keys after NodePort -> ClusterIP, want %d", n, before-2)
	}
	svc3.Spec.Type = corev1.ServiceTypeNodePort
	svc3, err = reps[1].cs.CoreV1().Services(testNamespace).Update(ctx, svc3, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc3.Spec.Ports[0].NodePort == 0 || svc3.Spec.Ports[1].NodePort == 0 || count(t, reps[0].store, servicealloc.NodePortPrefix) != before {
		t.Errorf("ClusterIP -> NodePort: ports %+v; want two node ports claimed", svc3.Spec.Ports)
	}

	// Headless takes nothing.
	ipKeys := count(t, reps[0].store, servicealloc.IPPrefix)
	h, err := reps[0].cs.CoreV1().Services(testNamespace).Create(ctx, service("headless", corev1.ServiceTypeClusterIP, corev1.ClusterIPNone), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Spec.ClusterIP != corev1.ClusterIPNone || count(t, reps[0].store, servicealloc.IPPrefix) != ipKeys {
		t.Errorf("headless: clusterIP %q; IP keys %d -> %d", h.Spec.ClusterIP, ipKeys, count(t, reps[0].store, servicealloc.IPPrefix))
	}

	// Deleting every service frees every key.
	list, err = reps[1].cs.CoreV1().Services(testNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if err := reps[len(s.Name)%2].cs.CoreV1().Services(testNamespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if ni, np := count(t, reps[0].store, servicealloc.IPPrefix), count(t, reps[0].store, servicealloc.NodePortPrefix); ni != 0 || np != 0 {
		t.Errorf("after deleting every service: %d IP keys, %d node port keys; want none", ni, np)
	}
}

// TestIntegrationServiceAllocationRace has two API servers on one etcd
// race for the same explicit cluster IP and node port: exactly one wins
// each time.
func TestIntegrationServiceAllocationRace(t *testing.T) {
	harness.SkipShort(t)
	ctx := context.Background()
	reps := startReplicas(t, 2)
	for round := range 20 {
		ip := fmt.Sprintf("10.200.1.%d", 10+round)
		port := int32(30500 + round)
		var wg sync.WaitGroup
		results := make([]error, len(reps))
		start := make(chan struct{})
		for i, r := range reps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				name := fmt.Sprintf("race-%d-%d", round, i)
				s := service(name, corev1.ServiceTypeNodePort, ip, corev1.ServicePort{Port: 80, NodePort: port})
				if round%2 == 1 {
					// Odd rounds race for the node port alone: each server
					// asks for an IP of its own, outside the ones the even
					// rounds race for (a picked IP could be one of those).
					s.Spec.ClusterIP = fmt.Sprintf("10.200.2.%d", 2*round+i)
				}
				_, results[i] = r.cs.CoreV1().Services(testNamespace).Create(ctx, s, metav1.CreateOptions{})
			}()
		}
		close(start)
		wg.Wait()
		won := 0
		for i, err := range results {
			switch {
			case err == nil:
				won++
			case apierrors.IsInvalid(err) && strings.Contains(err.Error(), "already allocated"):
			default:
				t.Errorf("round %d, server %d: %v, want success or a 422 already allocated", round, i, err)
			}
		}
		if won != 1 {
			t.Errorf("round %d: %d servers won %s/%d, want exactly one (results %v)", round, won, ip, port, results)
		}
	}
}

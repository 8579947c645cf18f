package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebus/kubebus/bus/lifecycle"
	"github.com/kubebus/kubebus/test/harness"
)

// TestIntegrationProxyRecordsProgrammed: `kubebus proxy`, with a
// kubeconfig for system:kube-proxy, records in its Lease
// kube-node-lease/kube-proxy-<node> a revision at least an EndpointSlice's
// once it programmed it, and when the rules hold it: first for a new
// Service's slice, then for a change of the slice alone (the Services
// cache then has nothing newer). The bootstrap policy lets the proxy write
// that Lease and nothing more.
func TestIntegrationProxyRecordsProgrammed(t *testing.T) {
	harness.SkipShort(t)
	ns := harness.NodeNetNS(t)
	s := harness.StartServer(t, "", "--disable-controller-manager", noServiceAccounts)
	cs := s.Clientset(t)
	ctx := context.Background()
	proxyKubeconfig := filepath.Join(t.TempDir(), "kubeconfig-proxy")
	cmd := exec.Command(harness.Binary(t), "certs", "kubeconfig", "--pki-dir", filepath.Join(s.Dir, "pki"),
		"--user", "system:kube-proxy", "--server", s.URL, "--out", proxyKubeconfig)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubebus certs kubeconfig: %v\n%s", err, b)
	}
	const node = "proxy-record"
	harness.StartProcess(t, "proxy", "--kubeconfig", proxyKubeconfig, "--nats-url", s.BusURL(t), "--node-netns", ns,
		"--hostname-override", node, "--metrics-bind-address", "")
	nft := func() string {
		out, err := exec.Command("ip", "netns", "exec", filepath.Base(ns), "nft", "list", "table", "ip", "kubebus").CombinedOutput()
		if err != nil {
			return "error: " + err.Error() + ": " + string(out)
		}
		return string(out)
	}

	if _, err := cs.CoreV1().Services("default").Create(ctx, proxyService("rec"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	slice, err := cs.DiscoveryV1().EndpointSlices("default").Create(ctx, proxySlice("rec", "10.244.9.7"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lease := waitProgrammed(t, cs, node, slice.ResourceVersion)
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != node || lease.Spec.RenewTime == nil {
		t.Errorf("lease spec %+v, want held by %s and renewed", lease.Spec, node)
	}
	if _, at, _ := lifecycle.ReadProgrammed(lease); at.Before(before) || at.After(time.Now()) {
		t.Errorf("programmed at %v, not after the slice was written (%v)", at, before)
	}
	if out := nft(); !strings.Contains(out, "10.244.9.7:8080") {
		t.Errorf("the lease says the slice is programmed, the rules lack it:\n%s", out)
	}

	// A change of the slice alone.
	slice.Endpoints = proxySlice("rec", "10.244.9.7", "10.244.9.8").Endpoints
	slice, err = cs.DiscoveryV1().EndpointSlices("default").Update(ctx, slice, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitProgrammed(t, cs, node, slice.ResourceVersion)
	if out := nft(); !strings.Contains(out, "10.244.9.8:8080") {
		t.Errorf("the lease says the slice change is programmed, the rules lack it:\n%s", out)
	}

	// What system:kube-proxy may not do with leases.
	rc, err := clientcmd.BuildConfigFromFlags("", proxyKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	asProxy, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	err = asProxy.CoordinationV1().Leases(lifecycle.ProxyLeaseNamespace).Delete(ctx, lifecycle.ProxyLeaseName(node), metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("system:kube-proxy deleting its lease: %v, want Forbidden", err)
	}
	_, err = asProxy.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("system:kube-proxy creating a lease in default: %v, want Forbidden", err)
	}
}

// TestIntegrationProxyBusCredentialsOnly: a proxy given bus credentials
// and no kubeconfig programs the rules as before, says once that it
// cannot record them, and writes no Lease.
func TestIntegrationProxyBusCredentialsOnly(t *testing.T) {
	harness.SkipShort(t)
	ns := harness.NodeNetNS(t)
	s := harness.StartServer(t, "", "--disable-controller-manager", noServiceAccounts)
	cs := s.Clientset(t)
	ctx := context.Background()
	pki := filepath.Join(s.Dir, "pki")
	prefix := filepath.Join(t.TempDir(), "proxy")
	if b, err := exec.Command(harness.Binary(t), "certs", "client", "--pki-dir", pki, "--user", "system:kube-proxy", "--out", prefix).CombinedOutput(); err != nil {
		t.Fatalf("kubebus certs client: %v\n%s", err, b)
	}
	const node = "proxy-busonly"
	p := harness.StartProcess(t, "proxy", "--nats-url", s.BusURL(t), "--nats-ca-file", filepath.Join(pki, "ca.crt"),
		"--nats-cert-file", prefix+".crt", "--nats-key-file", prefix+".key", "--node-netns", ns,
		"--hostname-override", node, "--metrics-bind-address", "")
	if _, err := cs.CoreV1().Services("default").Create(ctx, proxyService("busonly"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.DiscoveryV1().EndpointSlices("default").Create(ctx, proxySlice("busonly", "10.244.9.9"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		out, err := exec.Command("ip", "netns", "exec", filepath.Base(ns), "nft", "list", "table", "ip", "kubebus").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "10.244.9.9:8080") {
			return fmt.Errorf("the rules lack the endpoint (%v):\n%s", err, out)
		}
		return nil
	})
	if n := strings.Count(p.Logs(), "not recording what the proxy programmed"); n != 1 {
		t.Errorf("the proxy said %d times that it cannot record, want once:\n%s", n, p.Logs())
	}
	_, err := cs.CoordinationV1().Leases(lifecycle.ProxyLeaseNamespace).Get(ctx, lifecycle.ProxyLeaseName(node), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("getting the proxy's lease: %v, want NotFound", err)
	}
}

// TestIntegrationServerProxyRecordsProgrammed: the proxy `kubebus server`
// runs for its local node records in the node's proxy Lease, with the
// server's credentials for system:kube-proxy.
func TestIntegrationServerProxyRecordsProgrammed(t *testing.T) {
	s, n := harness.StartServerWithNode(t)
	cs := s.Clientset(t)
	ctx := context.Background()
	if _, err := cs.CoreV1().Services("default").Create(ctx, proxyService("rec"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice, err := cs.DiscoveryV1().EndpointSlices("default").Create(ctx, proxySlice("rec", "10.244.9.7"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitProgrammed(t, cs, n.Name, slice.ResourceVersion)
}

// waitProgrammed waits until node's proxy Lease records a revision at
// least rv and returns it.
func waitProgrammed(t *testing.T, cs kubernetes.Interface, node, rv string) *coordinationv1.Lease {
	t.Helper()
	want, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	var lease *coordinationv1.Lease
	harness.Eventually(t, 30*time.Second, func() error {
		l, err := cs.CoordinationV1().Leases(lifecycle.ProxyLeaseNamespace).Get(context.Background(), lifecycle.ProxyLeaseName(node), metav1.GetOptions{})
		if err != nil {
			return err
		}
		rev, _, ok := lifecycle.ReadProgrammed(l)
		if !ok || rev < want {
			return fmt.Errorf("lease %s records revision %d (ok %v), want at least %d", l.Name, rev, ok, want)
		}
		lease = l
		return nil
	})
	return lease
}

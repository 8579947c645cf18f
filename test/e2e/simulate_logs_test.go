package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/test/harness"
)

const hollowPod = `apiVersion: v1
kind: Pod
metadata:
  name: web-1
spec:
  containers:
  - name: web
    image: busybox
  - name: side
    image: busybox
`

// TestIntegrationSimulatedNodeLogs: hollow nodes advertise only loopback
// addresses and serve their pods' logs there, so the stock `kubectl logs` of
// a pod on one answers (with a line saying the node is simulated) through
// the API server without any connection leaving 127.0.0.0/8.
func TestIntegrationSimulatedNodeLogs(t *testing.T) {
	harness.SkipShort(t)
	const nodes = 3
	s := harness.StartServer(t, "")
	cs := s.Clientset(t)
	ctx := context.Background()
	harness.StartHollowNodes(t, s, nodes)
	kubectl := harness.Kubectl(t)
	s.MustRun(t, kubectl, hollowPod, "apply", "-f", "-")

	var pod *corev1.Pod
	harness.Eventually(t, time.Minute, func() error {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "web-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning || !strings.HasPrefix(p.Spec.NodeName, "hollow-") {
			return fmt.Errorf("pod web-1 is %s on %q", p.Status.Phase, p.Spec.NodeName)
		}
		pod = p
		return nil
	})
	if ip, err := netip.ParseAddr(pod.Status.HostIP); err != nil || !ip.IsLoopback() {
		t.Errorf("pod web-1 has hostIP %q, want a loopback address", pod.Status.HostIP)
	}

	// Every address of every hollow node is loopback (or its own name);
	// the API server dials the InternalIP.
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	endpoints := map[string]string{} // node -> InternalIP:port
	for _, n := range list.Items {
		if !strings.HasPrefix(n.Name, "hollow-") {
			t.Errorf("unexpected node %s", n.Name)
			continue
		}
		for _, a := range n.Status.Addresses {
			ip, err := netip.ParseAddr(a.Address)
			switch {
			case err == nil && !netip.MustParsePrefix("127.0.0.0/8").Contains(ip):
				t.Errorf("node %s advertises %s address %s, outside 127.0.0.0/8", n.Name, a.Type, a.Address)
			case err != nil && (a.Type != corev1.NodeHostName || a.Address != n.Name):
				t.Errorf("node %s advertises %s address %q, neither a loopback IP nor its own name", n.Name, a.Type, a.Address)
			case err == nil && a.Type == corev1.NodeInternalIP:
				endpoints[n.Name] = net.JoinHostPort(a.Address, strconv.Itoa(int(n.Status.DaemonEndpoints.KubeletEndpoint.Port)))
			}
		}
		if n.Status.DaemonEndpoints.KubeletEndpoint.Port <= 0 {
			t.Errorf("node %s reports kubelet port %d", n.Name, n.Status.DaemonEndpoints.KubeletEndpoint.Port)
		}
	}
	if len(endpoints) != nodes {
		t.Fatalf("%d hollow nodes with an InternalIP, want %d: %v", len(endpoints), nodes, endpoints)
	}
	seen := map[string]bool{}
	for name, ep := range endpoints {
		if host, _, _ := net.SplitHostPort(ep); seen[host] {
			t.Errorf("node %s shares its address %s", name, host)
		} else {
			seen[host] = true
		}
	}

	// Each node's kubelet port is served over HTTPS with a certificate
	// from the cluster CA for its address, and only the API server may
	// read logs.
	pki := filepath.Join(s.Dir, "pki")
	admin := kubeletClient(t, pki, "admin")
	for name, ep := range endpoints {
		if code, body := fetch(t, admin, "https://"+ep+"/healthz"); code != http.StatusOK || body != "ok" {
			t.Errorf("node %s at %s: /healthz = %d %q", name, ep, code, body)
		}
	}
	url := "https://" + endpoints[pod.Spec.NodeName] + "/containerLogs/default/web-1/web"
	if code, body := fetch(t, admin, url); code != http.StatusForbidden {
		t.Errorf("the admin reading logs straight from the hollow kubelet: %d %q, want 403", code, body)
	}
	apiserver := kubeletClient(t, pki, "client-kube-apiserver-kubelet-client")
	for name, ep := range endpoints {
		if name == pod.Spec.NodeName {
			continue
		}
		if code, body := fetch(t, apiserver, "https://"+ep+"/containerLogs/default/web-1/web"); code != http.StatusNotFound {
			t.Errorf("web-1's log asked of node %s, which does not run it: %d %q, want 404", name, code, body)
		}
	}

	// The stock kubectl, through the API server.
	want := fmt.Sprintf("kubebus: node %s is simulated; pod default/web-1 container web has no real log\n", pod.Spec.NodeName)
	if out := s.MustRun(t, kubectl, "", "logs", "web-1", "-c", "web"); out != want {
		t.Errorf("kubectl logs web-1 -c web = %q, want %q", out, want)
	}
	// A follow ends: a hollow container writes nothing more.
	if out := s.MustRun(t, kubectl, "", "logs", "-f", "web-1", "-c", "side"); out != strings.Replace(want, "container web", "container side", 1) {
		t.Errorf("kubectl logs -f web-1 -c side = %q", out)
	}
	if out, err := s.Run(t, kubectl, "", "logs", "web-1", "-c", "web", "--previous"); err == nil || !strings.Contains(err.Error(), "previous terminated container") {
		t.Errorf("kubectl logs --previous = %q, %v; want the kubelet's not-found error", out, err)
	}
}

// kubeletClient is an HTTPS client that trusts the cluster CA in pki and
// presents the pki's client certificate <name>.crt.
func kubeletClient(t *testing.T, pki, name string) *http.Client {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(pki, name+".crt"), filepath.Join(pki, name+".key"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func fetch(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// TestIntegrationSimulatedNodeFlags: hollow nodes refuse a routable address
// range, and refuse to start without the CA key their log server needs
// unless told not to serve logs.
func TestIntegrationSimulatedNodeFlags(t *testing.T) {
	harness.SkipShort(t)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	// Never dialled: the flags are refused first.
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--node-ip-range", "10.10.0.0/16", "--serve-logs=false"}, "--node-ip-range: simulate: node IP range 10.10.0.0/16 is outside 127.0.0.0/8"},
		{[]string{"--node-ip-range", "127.1.0.0"}, "is not a CIDR"},
		{nil, "pass --client-ca-file"},
		{[]string{"--ca-key-file", "x"}, "--ca-key-file is no longer accepted"},
	}
	for _, tc := range cases {
		args := append([]string{"kubelet", "--kubeconfig", kubeconfig, "--simulate=2"}, tc.args...)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, harness.Binary(t), args...).CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), tc.wantErr) {
			t.Errorf("kubebus %v: %v\n%s\nwant a failure naming %q", args, err, out, tc.wantErr)
		}
	}
}

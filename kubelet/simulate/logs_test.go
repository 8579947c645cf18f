package simulate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/kubebus/kubebus/kubelet/certs"
	"github.com/kubebus/kubebus/kubelet/certs/certstest"
	"github.com/kubebus/kubebus/kubelet/server"
)

func TestPodLog(t *testing.T) {
	t.Parallel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"}, Spec: corev1.PodSpec{
		NodeName:            "hollow-3",
		InitContainers:      []corev1.Container{{Name: "init"}},
		Containers:          []corev1.Container{{Name: "web"}, {Name: "side"}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}},
	}}
	tests := []struct {
		name      string
		node      string
		pod       *corev1.Pod
		container string
		previous  bool
		want      string
		wantCode  int
	}{
		{name: "a container of a pod on the node", node: "hollow-3", pod: pod, container: "web",
			want: "kubebus: node hollow-3 is simulated; pod default/web-1 container web has no real log\n"},
		{name: "an init container", node: "hollow-3", pod: pod, container: "init",
			want: "kubebus: node hollow-3 is simulated; pod default/web-1 container init has no real log\n"},
		{name: "an ephemeral container", node: "hollow-3", pod: pod, container: "debug",
			want: "kubebus: node hollow-3 is simulated; pod default/web-1 container debug has no real log\n"},
		{name: "no such pod", node: "hollow-3", container: "web", wantCode: http.StatusNotFound},
		{name: "a pod of another node", node: "hollow-4", pod: pod, container: "web", wantCode: http.StatusNotFound},
		{name: "no such container", node: "hollow-3", pod: pod, container: "db", wantCode: http.StatusNotFound},
		{name: "hollow containers never restart", node: "hollow-3", pod: pod, container: "web", previous: true, wantCode: http.StatusNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := podLog(tc.node, tc.pod, "default", "web-1", tc.container, tc.previous)
			if tc.wantCode != 0 {
				var e *server.Error
				if !errors.As(err, &e) || e.Code != tc.wantCode {
					t.Fatalf("podLog = %q, %v; want a %d", got, err, tc.wantCode)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("podLog = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// localConn is a connection that came in on a given local address.
type localConn struct {
	net.Conn
	local net.Addr
}

func (c localConn) LocalAddr() net.Addr { return c.local }

// TestServingCerts: the hollow nodes' serving certificates come through
// the CSR API, one CSR per certBlock nodes, approved by the process itself
// and signed by the controller-manager (here a test signer).
func TestServingCerts(t *testing.T) {
	t.Parallel()
	client := certstest.NewClientset()
	signer := certstest.NewSigner(t) // signs what is approved, approves nothing
	signer.Start(t, client)
	const n = certBlock + 200
	addrs, err := NodeIPs(netip.MustParsePrefix(DefaultNodeIPRange), n)
	if err != nil {
		t.Fatal(err)
	}
	l := &logTexter{byAddr: map[netip.Addr]int{}}
	for i, a := range addrs {
		l.byAddr[a] = i
	}
	cfg := Config{Client: client, Prefix: "hollow-", Clock: clock.RealClock{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	managers, getCert, err := servingCerts(cfg, addrs, l)
	if err != nil {
		t.Fatal(err)
	}
	hello := func(addr string) *tls.ClientHelloInfo {
		return &tls.ClientHelloInfo{Conn: localConn{local: net.TCPAddrFromAddrPort(netip.MustParseAddrPort(addr))}}
	}
	if _, err := getCert(hello(addrs[0].String() + ":10250")); err == nil || !strings.Contains(err.Error(), "no serving certificate available") {
		t.Errorf("before the certificates are signed: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, m := range managers {
		go func() { _ = m.Run(ctx) }()
	}
	seen := map[*tls.Certificate]bool{}
	for _, i := range []int{0, 999, 1000, n - 1} {
		cert := waitCert(t, func() (*tls.Certificate, error) { return getCert(hello(addrs[i].String() + ":10250")) })
		seen[cert] = true
		if err := cert.Leaf.VerifyHostname(addrs[i].String()); err != nil {
			t.Errorf("node %d's certificate does not name %s: %v", i, addrs[i], err)
		}
		if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: signer.Pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("node %d's certificate does not verify against the CA: %v", i, err)
		}
		if len(cert.Leaf.IPAddresses) > certBlock {
			t.Errorf("node %d's certificate names %d addresses", i, len(cert.Leaf.IPAddresses))
		}
	}
	if len(seen) != 2 {
		t.Errorf("%d certificates for %d nodes, want 2", len(seen), n)
	}
	reqs, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for _, r := range reqs.Items {
		if r.Spec.SignerName != certificatesv1.KubeletServingSignerName || len(r.Status.Conditions) == 0 || r.Status.Conditions[0].Reason != certs.ApprovedReason {
			t.Errorf("CSR %s: signer %s, conditions %+v", r.Name, r.Spec.SignerName, r.Status.Conditions)
		}
		b, _ := pem.Decode(r.Spec.Request)
		cr, err := x509.ParseCertificateRequest(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		subjects = append(subjects, cr.Subject.CommonName)
	}
	slices.Sort(subjects)
	if want := []string{"system:node:hollow-0-999", "system:node:hollow-1000-1199"}; !slices.Equal(subjects, want) {
		t.Errorf("CSR subjects %q, want %q", subjects, want)
	}
	if _, err := getCert(hello("127.0.0.1:10250")); err == nil || !strings.Contains(err.Error(), "no hollow node at 127.0.0.1") {
		t.Errorf("an address of no node: %v", err)
	}
}

// waitCert polls get until it returns a certificate, for up to 30 seconds.
func waitCert(t *testing.T, get func() (*tls.Certificate, error)) *tls.Certificate {
	t.Helper()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := get()
		switch {
		case err == nil:
			return c
		case time.Now().After(deadline):
			t.Fatal(err)
		}
		<-tick.C
	}
}

func TestListen(t *testing.T) {
	t.Parallel()
	addrs, err := NodeIPs(netip.MustParsePrefix("127.77.0.0/16"), 3)
	if err != nil {
		t.Fatal(err)
	}
	lns, ports, err := listen(addrs, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, ln := range lns {
		got := ln.Addr().(*net.TCPAddr).AddrPort()
		if got.Addr() != addrs[i] || got.Port() == 0 || int32(got.Port()) != ports[i] {
			t.Errorf("node %d listens on %s, reports port %d; want %s and that port", i, got, ports[i], addrs[i])
		}
	}
	// A port taken on one of the addresses: none stays open.
	_, _, err = listen([]netip.Addr{netip.MustParseAddr("127.77.9.9"), addrs[1]}, int(ports[1]))
	if err == nil || !strings.Contains(err.Error(), addrs[1].String()) {
		t.Fatalf("listening on a taken port: %v", err)
	}
	ln, err := net.Listen("tcp", netip.AddrPortFrom(netip.MustParseAddr("127.77.9.9"), uint16(ports[1])).String())
	if err != nil {
		t.Errorf("the listener opened before the failure was not closed: %v", err)
	} else {
		ln.Close()
	}
	for _, ln := range lns {
		ln.Close()
	}
}

func TestLogConfigValidate(t *testing.T) {
	t.Parallel()
	ok := LogConfig{CAFile: "ca.crt", ClientUser: "kube-apiserver-kubelet-client"}
	tests := []struct {
		name    string
		mut     func(*LogConfig)
		wantErr string
	}{
		{"complete", func(*LogConfig) {}, ""},
		{"a fixed port", func(c *LogConfig) { c.Port = 10250 }, ""},
		{"no CA certificate", func(c *LogConfig) { c.CAFile = "" }, "the cluster CA's certificate file"},
		{"no user", func(c *LogConfig) { c.ClientUser = "" }, "the user allowed"},
		{"a port too high", func(c *LogConfig) { c.Port = 70000 }, "is not a port"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := ok
			tc.mut(&c)
			err := c.validate()
			if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("validate = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

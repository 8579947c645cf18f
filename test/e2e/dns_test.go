package e2e

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/kubelet/cni"
	"github.com/kubebus/kubebus/test/harness"
)

// dnsWorkload is two busybox httpd pods behind the Service web (ClusterIP,
// port 8080) and the headless Service web-headless.
const dnsWorkload = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: httpd
        image: busybox:latest
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www"]
        ports:
        - containerPort: 8080
        readinessProbe:
          tcpSocket: {port: 8080}
          periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 8080, targetPort: 8080}
---
apiVersion: v1
kind: Service
metadata:
  name: web-headless
spec:
  clusterIP: None
  selector: {app: web}
  ports:
  - {name: http, port: 8080, targetPort: 8080}
`

// dnsClientScript runs in a pod: it waits until the cluster DNS answers,
// then prints each look-up between markers. (Debian's busybox 1.35 wget
// crashes with -T, hence timeout.)
const dnsClientScript = `for i in $(seq 1 60); do nslookup web.default.svc.cluster.local >/dev/null 2>&1 && break; sleep 1; done
echo "== resolv.conf"; cat /etc/resolv.conf
echo "== web"; nslookup web
echo "== fqdn"; nslookup web.default.svc.cluster.local
echo "== headless"; nslookup web-headless.default.svc.cluster.local
echo "== outside"; nslookup outside.example
for name in web web.default.svc.cluster.local; do
  echo "== connect $name"; timeout 10 wget -q -O - "http://$name:8080/"
done
echo "== end"
`

// loopbackUpstream is the test's own upstream resolver on 127.0.0.1 (UDP
// and TCP): outside.example has A 192.0.2.44, other names NXDOMAIN. It
// counts the questions it was asked about outside.example.
func loopbackUpstream(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int64
	h := mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) {
		m := new(mdns.Msg).SetReply(r)
		q := r.Question[0]
		if strings.EqualFold(q.Name, "outside.example.") {
			asked.Add(1)
			if q.Qtype == mdns.TypeA {
				m.Answer = append(m.Answer, &mdns.A{Hdr: mdns.RR_Header{Name: q.Name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 60}, A: net.ParseIP("192.0.2.44")})
			}
		} else {
			m.Rcode = mdns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})
	for _, s := range []*mdns.Server{{PacketConn: pc, Handler: h}, {Listener: ln, Handler: h}} {
		go func() { _ = s.ActivateAndServe() }()
		t.Cleanup(func() { _ = s.Shutdown() })
	}
	return pc.LocalAddr().String(), &asked
}

// queryInNetNS asks server (udp) from inside a network namespace.
func queryInNetNS(netns, server, name string, qtype uint16) (*mdns.Msg, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := cni.Dialer(netns)(ctx, "udp", server)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	co := &mdns.Conn{Conn: c}
	m := new(mdns.Msg).SetQuestion(name, qtype)
	if err := co.WriteMsg(m); err != nil {
		return nil, err
	}
	return co.ReadMsg()
}

// aRecords returns the A records' addresses, sorted.
func aRecords(m *mdns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		if a, ok := rr.(*mdns.A); ok {
			out = append(out, a.A.String())
		}
	}
	slices.Sort(out)
	return out
}

// section returns the lines of the client pod's output between "== name"
// and the next marker.
func section(out, name string) string {
	_, rest, ok := strings.Cut(out, "== "+name+"\n")
	if !ok {
		return ""
	}
	s, _, _ := strings.Cut(rest, "\n== ")
	return s
}

// TestIntegrationClusterDNS: `kubebus server` runs the cluster DNS in the
// node network namespace behind the kube-dns Service (10.96.0.10); pods
// with the default dnsPolicy get it in their resolv.conf, resolve Services
// by short and full name and connect, a headless Service gives its ready
// pods' IPs, a pod with hostname and subdomain has its own name (and SRV
// target), other names go to the test's own upstream on loopback, and a
// change of endpoints is answered within 1 s.
func TestIntegrationClusterDNS(t *testing.T) {
	upstream, asked := loopbackUpstream(t)
	s, node := harness.StartServerWithNode(t, "--dns-upstream", upstream)
	cs := s.Clientset(t)
	ctx := context.Background()
	kubectl := harness.Kubectl(t)

	// The kube-dns Service, kept by the API server.
	harness.Eventually(t, 30*time.Second, func() error {
		svc, err := cs.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if svc.Spec.ClusterIP != "10.96.0.10" || len(svc.Spec.Ports) != 2 {
			t.Fatalf("kube-dns: clusterIP %s ports %+v", svc.Spec.ClusterIP, svc.Spec.Ports)
		}
		return nil
	})
	const kubeDNS = "10.96.0.10:53"

	s.MustRun(t, kubectl, dnsWorkload, "apply", "-f", "-")
	var pods []corev1.Pod
	harness.Eventually(t, 90*time.Second, func() error {
		pods = podsOf(t, cs, "default", "app=web")
		n := 0
		for i := range pods {
			if ready(&pods[i]) {
				n++
			}
		}
		if n != 2 || len(pods) != 2 {
			return fmt.Errorf("%d of %d web pods ready", n, len(pods))
		}
		return nil
	})
	podIPs := []string{pods[0].Status.PodIP, pods[1].Status.PodIP}
	slices.Sort(podIPs)
	web, err := cs.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// From the node's network namespace, through the Service's ClusterIP.
	harness.Eventually(t, 30*time.Second, func() error {
		r, err := queryInNetNS(node.NetNS, kubeDNS, "web-headless.default.svc.cluster.local.", mdns.TypeA)
		if err != nil {
			return err
		}
		if got := aRecords(r); !slices.Equal(got, podIPs) {
			return fmt.Errorf("headless: %v, want %v", got, podIPs)
		}
		return nil
	})

	// From a pod with the default dnsPolicy (ClusterFirst).
	client := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dns-client"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "c", Image: "busybox:latest", ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"sh", "-c", dnsClientScript},
		}}},
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, client, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var out string
	harness.Eventually(t, 120*time.Second, func() error {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "dns-client", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return fmt.Errorf("dns-client is %s", p.Status.Phase)
		}
		out = s.MustRun(t, kubectl, "", "logs", "dns-client")
		return nil
	})
	t.Logf("dns-client output:\n%s", out)
	if !strings.Contains(out, "== end") {
		t.Fatalf("the client did not finish")
	}
	rc := section(out, "resolv.conf")
	for _, want := range []string{"nameserver 10.96.0.10", "search default.svc.cluster.local svc.cluster.local cluster.local", "options ndots:5"} {
		if !strings.Contains(rc, want) {
			t.Errorf("resolv.conf lacks %q:\n%s", want, rc)
		}
	}
	wantWeb := "Name:\tweb.default.svc.cluster.local\nAddress: " + web.Spec.ClusterIP + "\n"
	for _, sec := range []string{"web", "fqdn"} {
		if !strings.Contains(section(out, sec), wantWeb) {
			t.Errorf("nslookup (%s) does not give the ClusterIP %s:\n%s", sec, web.Spec.ClusterIP, section(out, sec))
		}
	}
	for _, ip := range podIPs {
		if !strings.Contains(section(out, "headless"), "Address: "+ip+"\n") {
			t.Errorf("the headless Service lacks pod IP %s:\n%s", ip, section(out, "headless"))
		}
	}
	if !strings.Contains(section(out, "outside"), "Address: 192.0.2.44") || asked.Load() == 0 {
		t.Errorf("outside.example was not forwarded to the test's upstream (asked %d):\n%s", asked.Load(), section(out, "outside"))
	}
	for _, name := range []string{"web", "web.default.svc.cluster.local"} {
		body := strings.TrimSpace(section(out, "connect "+name))
		if body != pods[0].Name && body != pods[1].Name {
			t.Errorf("wget http://%s:8080/ answered %q, not a web pod", name, body)
		}
	}

	// A pod with hostname and subdomain (as a StatefulSet's) under a
	// headless Service of that name: <hostname>.<subdomain>.<ns>.svc.
	s.MustRun(t, kubectl, `apiVersion: v1
kind: Service
metadata:
  name: sub
spec:
  clusterIP: None
  selector: {app: sub}
  ports:
  - {name: http, port: 8080}
---
apiVersion: v1
kind: Pod
metadata:
  name: sub-0
  labels: {app: sub}
spec:
  hostname: h0
  subdomain: sub
  containers:
  - name: httpd
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "mkdir -p /www && exec httpd -f -p 8080 -h /www"]
    readinessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
`, "apply", "-f", "-")
	harness.Eventually(t, 60*time.Second, func() error {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "sub-0", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !ready(p) {
			return fmt.Errorf("sub-0 not ready")
		}
		r, err := queryInNetNS(node.NetNS, kubeDNS, "h0.sub.default.svc.cluster.local.", mdns.TypeA)
		if err != nil {
			return err
		}
		if got := aRecords(r); !slices.Equal(got, []string{p.Status.PodIP}) {
			return fmt.Errorf("h0.sub: %v, want %s", got, p.Status.PodIP)
		}
		r, err = queryInNetNS(node.NetNS, kubeDNS, "_http._tcp.sub.default.svc.cluster.local.", mdns.TypeSRV)
		if err != nil {
			return err
		}
		if len(r.Answer) != 1 || r.Answer[0].(*mdns.SRV).Target != "h0.sub.default.svc.cluster.local." || r.Answer[0].(*mdns.SRV).Port != 8080 {
			return fmt.Errorf("SRV _http._tcp.sub: %v", r.Answer)
		}
		return nil
	})

	// A change of endpoints is answered within 1 s: a selectorless headless
	// Service whose EndpointSlice the test writes.
	if _, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "moving"},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: "x", Port: 1}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "moving-1", Labels: map[string]string{discoveryv1.LabelServiceName: "moving"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.99.1"}, Conditions: discoveryv1.EndpointConditions{Ready: new(true)}}},
	}
	if slice, err = cs.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	answers := func(ip string) bool {
		r, err := queryInNetNS(node.NetNS, kubeDNS, "moving.default.svc.cluster.local.", mdns.TypeA)
		return err == nil && slices.Equal(aRecords(r), []string{ip})
	}
	harness.Eventually(t, 10*time.Second, func() error {
		if !answers("10.244.99.1") {
			return fmt.Errorf("moving not answered yet")
		}
		return nil
	})
	for i, ip := range []string{"10.244.99.2", "10.244.99.3", "10.244.99.4"} {
		slice.Endpoints[0].Addresses = []string{ip}
		start := time.Now()
		if slice, err = cs.DiscoveryV1().EndpointSlices("default").Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		for !answers(ip) {
			if time.Since(start) > time.Second {
				t.Fatalf("change %d: %s not answered within 1 s of the update", i, ip)
			}
			time.Sleep(10 * time.Millisecond) // polling interval
		}
		t.Logf("change %d answered %v after the update was sent", i, time.Since(start).Round(time.Millisecond))
	}
}

// TestIntegrationDNSCommand: `kubebus dns` on its own, reading the bus as
// system:kube-dns: it answers a Service's name on its loopback listener
// over UDP and TCP, forwards other names to the test's upstream, and
// publishes (then removes) its endpoint of the kube-dns Service.
func TestIntegrationDNSCommand(t *testing.T) {
	upstream, _ := loopbackUpstream(t)
	s := harness.StartServer(t, "")
	cs := s.Clientset(t)
	ctx := context.Background()
	creds := s.BusCredentials(t, "system:kube-dns")
	listen := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	p := harness.StartProcess(t, "dns", "--listen", listen, "--upstream", upstream, "--hostname-override", "dns-1",
		"--kubeconfig", s.Kubeconfig, "--advertise-address", "192.0.2.53", "--nats-url", s.BusURL(t),
		"--nats-ca-file", creds.CAFile, "--nats-cert-file", creds.CertFile, "--nats-key-file", creds.KeyFile)
	svc, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, network := range []string{"udp", "tcp"} {
		c := &mdns.Client{Net: network, Timeout: 2 * time.Second}
		harness.Eventually(t, 30*time.Second, func() error {
			r, _, err := c.Exchange(new(mdns.Msg).SetQuestion("web.default.svc.cluster.local.", mdns.TypeA), listen)
			if err != nil {
				return err
			}
			if got := aRecords(r); !slices.Equal(got, []string{svc.Spec.ClusterIP}) {
				return fmt.Errorf("%s: web answered %v, want %s", network, got, svc.Spec.ClusterIP)
			}
			return nil
		})
		r, _, err := c.Exchange(new(mdns.Msg).SetQuestion("outside.example.", mdns.TypeA), listen)
		if err != nil || !slices.Equal(aRecords(r), []string{"192.0.2.44"}) {
			t.Fatalf("%s: outside.example: %v %v", network, r, err)
		}
	}
	harness.Eventually(t, 30*time.Second, func() error {
		sl, err := cs.DiscoveryV1().EndpointSlices("kube-system").Get(ctx, "kube-dns-dns-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if sl.Labels[discoveryv1.LabelServiceName] != "kube-dns" || len(sl.Endpoints) != 1 || sl.Endpoints[0].Addresses[0] != "192.0.2.53" {
			t.Fatalf("published slice %+v", sl)
		}
		return nil
	})
	p.Stop()
	harness.Eventually(t, 10*time.Second, func() error {
		if _, err := cs.DiscoveryV1().EndpointSlices("kube-system").Get(ctx, "kube-dns-dns-1", metav1.GetOptions{}); err == nil {
			return fmt.Errorf("the slice is still there after the server stopped")
		}
		return nil
	})
}

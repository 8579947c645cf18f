package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubebus/kubebus/apiserver/pki"
	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/busauth"
	"github.com/kubebus/kubebus/test/harness"
)

func copyFiles(t *testing.T, from, to string, names ...string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(from, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, n), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// runMembers runs `kubebus ARGS` for each member until the test ends.
func runMembers(t *testing.T, members [][]string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var logs bytes.Buffer
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if t.Failed() {
			t.Logf("members' output:\n%s", logs.String())
		}
	})
	for _, args := range members {
		wg.Go(func() {
			var out, errb bytes.Buffer
			err := Run(ctx, args, &out, &errb)
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(&logs, "== %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
		})
	}
}

// TestIntegrationEtcdMembers: three `kubebus etcd` members with a shared
// etcd CA form one raft cluster over peer TLS; a write through one member
// is read through another by a client with the API server's etcd
// certificate, and a client without a certificate is refused.
func TestIntegrationEtcdMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three etcd members")
	}
	base := t.TempDir()
	var out, errb bytes.Buffer
	if err := Run(context.Background(), []string{"certs", "etcd", "--pki-dir", filepath.Join(base, "pki")}, &out, &errb); err != nil {
		t.Fatalf("kubebus certs etcd: %v\n%s", err, errb.String())
	}
	b := pki.EtcdFiles(filepath.Join(base, "pki"))
	names := []string{"e0", "e1", "e2"}
	client, peer := map[string]int{}, map[string]int{}
	var initial []string
	ports := harness.FreePorts(t, 2*len(names))
	for i, n := range names {
		client[n], peer[n] = ports[2*i], ports[2*i+1]
		initial = append(initial, fmt.Sprintf("%s=https://127.0.0.1:%d", n, peer[n]))
	}
	var members [][]string
	for _, n := range names {
		dir := filepath.Join(base, n)
		copyFiles(t, filepath.Dir(b.CAFile), filepath.Join(dir, "pki", "etcd"), "ca.crt", "ca.key")
		members = append(members, []string{"etcd", "--name", n, "--data-dir", filepath.Join(dir, "data"), "--pki-dir", filepath.Join(dir, "pki"),
			"--client-port", fmt.Sprint(client[n]), "--peer-port", fmt.Sprint(peer[n]), "--initial-cluster", strings.Join(initial, ",")})
	}
	runMembers(t, members)

	cert, err := tls.LoadX509KeyPair(b.APIServerClientCertFile, b.APIServerClientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(b.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	dial := func(n string, withCert bool) *clientv3.Client {
		cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		if withCert {
			cfg.Certificates = []tls.Certificate{cert}
		}
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{fmt.Sprintf("https://127.0.0.1:%d", client[n])}, TLS: cfg, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	c0, c2 := dial("e0", true), dial("e2", true)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := c0.Put(pctx, "/members-test", "written through e0")
		pcancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no write through e0 in 90s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	ml, err := c2.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ml.Members) != 3 {
		t.Fatalf("the cluster has %d members, want 3: %v", len(ml.Members), ml.Members)
	}
	got, err := c2.Get(ctx, "/members-test")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "written through e0" {
		t.Fatalf("read through e2: %v", got.Kvs)
	}
	anon := dial("e1", false)
	actx, acancel := context.WithTimeout(ctx, 3*time.Second)
	defer acancel()
	if _, err := anon.Get(actx, "/members-test"); err == nil {
		t.Fatal("a client without a certificate read from etcd")
	}
}

// TestIntegrationNATSMembers: three `kubebus nats` members with the
// cluster CA join one NATS cluster over route TLS; the bus's streams made
// with three replicas have a leader and two current followers, and a
// message published through one member is read through another.
func TestIntegrationNATSMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three NATS members")
	}
	base := t.TempDir()
	ca, err := pki.Ensure(pki.Config{Dir: filepath.Join(base, "pki"), Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"n0", "n1", "n2"}
	port, route := map[string]int{}, map[string]int{}
	ports := harness.FreePorts(t, 2*len(names))
	for i, n := range names {
		port[n], route[n] = ports[2*i], ports[2*i+1]
	}
	var members [][]string
	for _, n := range names {
		dir := filepath.Join(base, n)
		// Each member has its serving and route certificates and the CA
		// certificate, not the CA key.
		var out, errb bytes.Buffer
		if err := Run(context.Background(), []string{"certs", "serving", "--pki-dir", filepath.Dir(ca.CAFile), "--name", "nats-" + n,
			"--hosts", "127.0.0.1,localhost"}, &out, &errb); err != nil {
			t.Fatalf("kubebus certs serving: %v\n%s", err, errb.String())
		}
		cert, key := filepath.Join(filepath.Dir(ca.CAFile), "serving-nats-"+n+".crt"), filepath.Join(filepath.Dir(ca.CAFile), "serving-nats-"+n+".key")
		routeCert, routeKey := filepath.Join(dir, "route.crt"), filepath.Join(dir, "route.key")
		if err := ca.IssueClientTo(routeCert, routeKey, busauth.RouteUser, nil); err != nil {
			t.Fatal(err)
		}
		var routes []string
		for _, o := range names {
			if o != n {
				routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", route[o]))
			}
		}
		members = append(members, []string{"--log-level", "debug", "nats", "--name", n, "--store-dir", filepath.Join(dir, "store"),
			"--ca-file", ca.CAFile, "--cert-file", cert, "--key-file", key, "--route-cert-file", routeCert, "--route-key-file", routeKey,
			"--port", fmt.Sprint(port[n]), "--cluster-port", fmt.Sprint(route[n]), "--routes", strings.Join(routes, ",")})
	}
	runMembers(t, members)

	certFile, keyFile, err := ca.IssueClient(busauth.PublisherUser, nil)
	if err != nil {
		t.Fatal(err)
	}
	creds := bus.Credentials{CAFile: ca.CAFile, CertFile: certFile, KeyFile: keyFile}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	nc, js, err := bus.Connect(fmt.Sprintf("nats://127.0.0.1:%d", port["n0"]), "members-test", creds)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for {
		// Each attempt on its own deadline: a JetStream API request whose
		// answer is lost (the cluster still forming) waits its whole
		// context out; the next attempt finds the stream made.
		actx, acancel := context.WithTimeout(ctx, 10*time.Second)
		err := bus.EnsureStreams(actx, js, bus.StreamLimits{MaxAge: time.Hour, MaxBytes: 64 << 20, Replicas: 3})
		acancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("making the streams with 3 replicas: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	var info *jetstream.StreamInfo
	for {
		s, err := js.Stream(ctx, bus.HistoryStream)
		if err == nil {
			info, err = s.Info(ctx)
		}
		if err == nil && info.Cluster != nil && info.Cluster.Leader != "" && len(info.Cluster.Replicas) == 2 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the history stream has no leader and two replicas: %+v, %v", info, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if info.Config.Replicas != 3 {
		t.Fatalf("the history stream has %d replicas, want 3", info.Config.Replicas)
	}
	// A client of another member sees the same stream, with the same
	// leader: the members share JetStream's metadata over the routes.
	reader := bus.Credentials{CAFile: ca.CAFile}
	reader.CertFile, reader.KeyFile, err = ca.IssueClient("system:admin", []string{"system:masters"})
	if err != nil {
		t.Fatal(err)
	}
	nc2, js2, err := bus.Connect(fmt.Sprintf("nats://127.0.0.1:%d", port["n2"]), "members-test-reader", reader)
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	s2, err := js2.Stream(ctx, bus.HistoryStream)
	if err != nil {
		t.Fatalf("the history stream through n2: %v", err)
	}
	info2, err := s2.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info2.Config.Replicas != 3 || info2.Cluster == nil || info2.Cluster.Leader == "" {
		t.Fatalf("through n2 the history stream is %+v", info2)
	}
	if !strings.Contains(nc2.ConnectedUrl(), fmt.Sprint(port["n2"])) {
		t.Fatalf("connected to %s, want n2", nc2.ConnectedUrl())
	}
}

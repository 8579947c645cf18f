package embedded_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/kubebus/kubebus/apiserver/pki"
	"github.com/kubebus/kubebus/apiserver/storage/embedded"
	"github.com/kubebus/kubebus/test/harness"
)

// refuseWithin bounds how long a refused client may take to fail.
const refuseWithin = 3 * time.Second

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped under -short")
	}
}

// memberTLS returns the TLS settings of a member whose certificates are in
// eb, trusting the etcd CA for clients and peers.
func memberTLS(eb *pki.EtcdBundle) *embedded.TLS {
	return &embedded.TLS{
		CertFile: eb.ServerCertFile, KeyFile: eb.ServerKeyFile, ClientCAFile: eb.CAFile,
		PeerCertFile: eb.PeerCertFile, PeerKeyFile: eb.PeerKeyFile,
		PeerClientCertFile: eb.PeerClientCertFile, PeerClientKeyFile: eb.PeerClientKeyFile,
		PeerCAFile: eb.CAFile,
	}
}

// ensureEtcdPKI makes the etcd certificates in dir/pki.
func ensureEtcdPKI(t *testing.T, dir string) *pki.EtcdBundle {
	t.Helper()
	eb, err := pki.EnsureEtcd(pki.EtcdConfig{Dir: filepath.Join(dir, "pki")})
	if err != nil {
		t.Fatal(err)
	}
	return eb
}

// clientTLS builds a client tls.Config that trusts caFile and presents
// certFile, or no certificate when certFile is empty.
func clientTLS(t *testing.T, caFile, certFile, keyFile string) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	tc := &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12}
	if !tc.RootCAs.AppendCertsFromPEM(pem) {
		t.Fatalf("no certificate in %s", caFile)
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc
}

func newClient(t *testing.T, endpoint string, tc *tls.Config) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tc, DialTimeout: refuseWithin, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// putGet writes key and reads it back through cli.
func putGet(ctx context.Context, cli *clientv3.Client, key, value string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, key, value); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	resp, err := cli.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != value {
		return fmt.Errorf("get %s = %v, want %q", key, resp.Kvs, value)
	}
	return nil
}

// refused fails t unless a request through cli fails within refuseWithin.
func refused(t *testing.T, cli *clientv3.Client, who string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), refuseWithin)
	defer cancel()
	_, err := cli.Put(ctx, "/refused/"+who, "x")
	if err == nil {
		t.Errorf("%s: put succeeded, want it refused", who)
		return
	}
	t.Logf("%s refused: %v", who, err)
}

// handshakeRefused fails t unless the member at endpoint ends a TLS
// connection that presents tc's certificate (or none) with an alert about
// the certificate. With TLS 1.3 the client learns it on its first read.
func handshakeRefused(t *testing.T, endpoint string, tc *tls.Config, who string) {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: refuseWithin}, "tcp", strings.TrimPrefix(endpoint, "https://"), tc)
	if err == nil {
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(refuseWithin))
		_, err = conn.Read(make([]byte, 1))
	}
	if err == nil || !strings.Contains(err.Error(), "remote error: tls:") || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("%s: TLS connection ended with %v, want a certificate alert from the member", who, err)
	}
}

func TestIntegrationTLSMember(t *testing.T) {
	skipShort(t)
	ctx := context.Background()
	dir := t.TempDir()
	eb := ensureEtcdPKI(t, dir)
	e, err := embedded.Start(ctx, embedded.Config{Dir: filepath.Join(dir, "etcd"), TLS: memberTLS(eb)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	if !strings.HasPrefix(e.Endpoint, "https://127.0.0.1:") {
		t.Fatalf("Endpoint = %q, want https://127.0.0.1:PORT", e.Endpoint)
	}

	// The API server's certificate, from the etcd CA, reads and writes.
	apiserver := newClient(t, e.Endpoint, clientTLS(t, eb.CAFile, eb.APIServerClientCertFile, eb.APIServerClientKeyFile))
	if err := putGet(ctx, apiserver, "/registry/k", "v"); err != nil {
		t.Fatalf("client with the etcd CA's certificate: %v", err)
	}

	// No certificate: refused.
	noCert := clientTLS(t, eb.CAFile, "", "")
	handshakeRefused(t, e.Endpoint, noCert, "no-certificate")
	refused(t, newClient(t, e.Endpoint, noCert), "no-certificate")

	// A certificate from the cluster CA, which every component holds:
	// refused, since the member trusts the etcd CA alone.
	cluster, err := pki.Ensure(pki.Config{Dir: filepath.Join(dir, "pki"), Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	clusterCert := clientTLS(t, eb.CAFile, cluster.AdminCertFile, cluster.AdminKeyFile)
	handshakeRefused(t, e.Endpoint, clusterCert, "cluster-CA")
	refused(t, newClient(t, e.Endpoint, clusterCert), "cluster-CA")

	// Plain http to the client port: refused.
	refused(t, newClient(t, "http://"+strings.TrimPrefix(e.Endpoint, "https://"), nil), "plain-http")

	// The refusals wrote nothing.
	resp, err := apiserver.Get(ctx, "/refused/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 {
		t.Errorf("refused clients wrote %d keys", len(resp.Kvs))
	}
}

// TestIntegrationPlainDataDirRestartsWithTLS checks that a data directory a
// plain-http member made (kubebus before TLS) keeps its keys when the
// member restarts with TLS.
func TestIntegrationPlainDataDirRestartsWithTLS(t *testing.T) {
	skipShort(t)
	ctx := context.Background()
	dir := t.TempDir()
	data := filepath.Join(dir, "etcd")
	peerPort := harness.FreePorts(t, 1)[0]
	plain, err := embedded.Start(ctx, embedded.Config{Dir: data, PeerPort: peerPort})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(plain.Endpoint, "http://") {
		t.Errorf("Endpoint without TLS = %q, want http://", plain.Endpoint)
	}
	cli := newClient(t, plain.Endpoint, nil)
	if err := putGet(ctx, cli, "/registry/old", "kept"); err != nil {
		t.Fatal(err)
	}
	_ = cli.Close()
	plain.Close()

	eb := ensureEtcdPKI(t, dir)
	e, err := embedded.Start(ctx, embedded.Config{Dir: data, PeerPort: peerPort, TLS: memberTLS(eb)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	cli = newClient(t, e.Endpoint, clientTLS(t, eb.CAFile, eb.APIServerClientCertFile, eb.APIServerClientKeyFile))
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := cli.Get(gctx, "/registry/old")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "kept" {
		t.Fatalf("after restart with TLS: %v, want kept", resp.Kvs)
	}
	list, err := cli.MemberList(gctx)
	if err != nil {
		t.Fatal(err)
	}
	wantPeer := fmt.Sprintf("https://127.0.0.1:%d", peerPort)
	if len(list.Members) != 1 || !slices.Equal(list.Members[0].PeerURLs, []string{wantPeer}) {
		t.Errorf("members after restart with TLS: %v, want one with peer URL %s", list.Members, wantPeer)
	}
}

func TestStartRejectsBadTLSFiles(t *testing.T) {
	dir := t.TempDir()
	eb := ensureEtcdPKI(t, dir)
	missing := filepath.Join(dir, "missing.crt")
	garbage := filepath.Join(dir, "garbage.crt")
	if err := os.WriteFile(garbage, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		change func(*embedded.TLS)
		want   string // in the error
	}{
		{"missing serving cert", func(c *embedded.TLS) { c.CertFile = missing }, missing},
		{"mismatched peer key", func(c *embedded.TLS) { c.PeerKeyFile = eb.ServerKeyFile }, eb.PeerCertFile},
		{"peer client cert without key", func(c *embedded.TLS) { c.PeerClientKeyFile = "" }, "peer client certificate"},
		{"no client CA", func(c *embedded.TLS) { c.ClientCAFile = "" }, "client CA"},
		{"garbage peer CA", func(c *embedded.TLS) { c.PeerCAFile = garbage }, garbage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := memberTLS(eb)
			tc.change(cfg)
			e, err := embedded.Start(context.Background(), embedded.Config{Dir: filepath.Join(t.TempDir(), "etcd"), TLS: cfg})
			if err == nil {
				e.Close()
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %q", err, tc.want)
			}
		})
	}
}

// TestIntegrationThreeMemberTLSCluster runs three members on loopback with
// peer TLS: they elect one leader, and a key written through one member is
// read through each of the others.
func TestIntegrationThreeMemberTLSCluster(t *testing.T) {
	skipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	eb := ensureEtcdPKI(t, dir)
	const n = 3
	ports := harness.FreePorts(t, 2*n)
	names := []string{"m0", "m1", "m2"}
	var initial []string
	for i, name := range names {
		initial = append(initial, fmt.Sprintf("%s=https://127.0.0.1:%d", name, ports[n+i]))
	}
	members := make([]*embedded.Etcd, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			members[i], errs[i] = embedded.Start(ctx, embedded.Config{
				Dir: filepath.Join(dir, name), Name: name, ClientPort: ports[i], PeerPort: ports[n+i],
				InitialCluster: strings.Join(initial, ","), TLS: memberTLS(eb),
			})
		})
	}
	wg.Wait()
	for i := range members {
		if members[i] != nil {
			t.Cleanup(members[i].Close)
		}
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %s: %v", names[i], err)
		}
	}

	tc := clientTLS(t, eb.CAFile, eb.APIServerClientCertFile, eb.APIServerClientKeyFile)
	clients := make([]*clientv3.Client, n)
	for i, m := range members {
		clients[i] = newClient(t, m.Endpoint, tc)
	}

	// One leader, which every member reports, among the three.
	list, err := clients[0].MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Members) != n {
		t.Fatalf("%d members, want %d", len(list.Members), n)
	}
	ids := map[uint64]bool{}
	for _, m := range list.Members {
		ids[m.ID] = true
		for _, u := range m.PeerURLs {
			if !strings.HasPrefix(u, "https://") {
				t.Errorf("member %s peer URL %s is not https", m.Name, u)
			}
		}
	}
	var leader uint64
	for i, m := range members {
		st, err := clients[i].Status(ctx, m.Endpoint)
		if err != nil {
			t.Fatalf("status of %s: %v", names[i], err)
		}
		if st.Leader == 0 || !ids[st.Leader] {
			t.Fatalf("%s reports leader %x, not a member", names[i], st.Leader)
		}
		if i > 0 && st.Leader != leader {
			t.Fatalf("%s reports leader %x, %s reported %x", names[i], st.Leader, names[0], leader)
		}
		leader = st.Leader
	}

	// Written through m0, read locally (serializable) on m1 and m2 once
	// replicated.
	if _, err := clients[0].Put(ctx, "/registry/replicated", "yes"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < n; i++ {
		for {
			resp, err := clients[i].Get(ctx, "/registry/replicated", clientv3.WithSerializable())
			if err == nil && len(resp.Kvs) == 1 && string(resp.Kvs[0].Value) == "yes" {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%s never had the key: %v %v", names[i], resp, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

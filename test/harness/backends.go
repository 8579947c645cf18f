package harness

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebus/kubebus/apiserver/pki"
	"github.com/kubebus/kubebus/apiserver/storage/embedded"
	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/natsserver"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	return FreePorts(t, 1)[0]
}

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago. It holds each listener until all are chosen: ports asked
// for one at a time can come back twice, since the kernel may hand out a
// port again as soon as its listener is closed.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// StartEtcd runs an etcd member in the test process that keeps all history.
func StartEtcd(t testing.TB) *embedded.Etcd {
	t.Helper()
	e, err := embedded.Start(context.Background(), embedded.Config{Dir: filepath.Join(t.TempDir(), "etcd"), CompactionRetention: "0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// NATS is a NATS server in the test process that can be restarted on the
// same port and store. It serves mutual TLS with a certificate of the
// cluster CA in PKIDir and lets in the identities bus/busauth knows.
type NATS struct {
	Port   int
	Dir    string
	PKIDir string
	tls    *tls.Config
	s      *natsserver.Server
	t      testing.TB
	alive  bool
}

// StartNATS runs a JetStream server on a free port with a serving
// certificate of the CA in pkiDir, creating the CA when there is none
// (pkiDir must hold the CA key): give the API servers the same pkiDir.
func StartNATS(t testing.TB, pkiDir string) *NATS {
	t.Helper()
	b, err := pki.Ensure(pki.Config{Dir: pkiDir, Hosts: localHosts})
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := b.IssueServing("kubebus-nats", localHosts)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := natsserver.ServerTLS(b.CAFile, cert, key)
	if err != nil {
		t.Fatal(err)
	}
	n := &NATS{Port: FreePort(t), Dir: filepath.Join(t.TempDir(), "nats"), PKIDir: pkiDir, tls: cfg, t: t}
	n.Start()
	t.Cleanup(n.Stop)
	return n
}

// localHosts are the names of loopback servers' certificates.
var localHosts = []string{"localhost", "127.0.0.1", "::1"}

// URL is the client URL.
func (n *NATS) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.Port) }

// Credentials issues user (in groups) a client certificate from the CA in
// PKIDir and returns them as bus credentials.
func (n *NATS) Credentials(t testing.TB, user string, groups ...string) bus.Credentials {
	t.Helper()
	return busCredentials(t, n.PKIDir, user, groups...)
}

// Connect connects to the server as user (in groups), as bus.Connect does.
func (n *NATS) Connect(t testing.TB, user string, groups ...string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return BusConnectAs(t, n.URL(), n.Credentials(t, user, groups...))
}

// Start (re)starts the server.
func (n *NATS) Start() {
	s, err := natsserver.Start(natsserver.Config{StoreDir: n.Dir, Port: n.Port, TLS: n.tls})
	if err != nil {
		n.t.Fatal(err)
	}
	n.s, n.alive = s, true
}

// Stop shuts the server down.
func (n *NATS) Stop() {
	if n.alive {
		n.s.Shutdown()
		n.alive = false
	}
}

// busCredentials issues user (in groups) a client certificate from the CA
// in pkiDir.
func busCredentials(t testing.TB, pkiDir, user string, groups ...string) bus.Credentials {
	t.Helper()
	b, err := pki.Load(pkiDir)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := b.IssueClient(user, groups)
	if err != nil {
		t.Fatal(err)
	}
	return bus.Credentials{CAFile: b.CAFile, CertFile: cert, KeyFile: key}
}

// BusConnectAs connects to the bus at url with creds, as bus.Connect does,
// and closes the connection when the test ends.
func BusConnectAs(t testing.TB, url string, creds bus.Credentials) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, js, err := bus.Connect(url, "e2e", creds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, js
}

// APIServer is a `kubebus apiserver` process.
type APIServer struct {
	URL    string
	Port   int
	args   []string
	cmd    *exec.Cmd
	done   chan struct{}
	logs   *lockedBuffer
	pkiDir string
}

// StartAPIServer runs `kubebus apiserver` against etcd and NATS with
// certificates from pkiDir and waits until /readyz answers. On the bus it
// is the publisher, with a certificate from pkiDir: start the NATS server
// with the same pkiDir (StartNATS).
func StartAPIServer(t testing.TB, etcdURL, natsURL, pkiDir string) *APIServer {
	t.Helper()
	a := &APIServer{Port: FreePort(t), logs: &lockedBuffer{}, pkiDir: pkiDir}
	a.URL = fmt.Sprintf("https://127.0.0.1:%d", a.Port)
	a.args = []string{"apiserver", "--etcd-servers", etcdURL, "--nats-url", natsURL, "--pki-dir", pkiDir,
		"--secure-port", fmt.Sprint(a.Port), "--write-kubeconfig", filepath.Join(pkiDir, fmt.Sprintf("kubeconfig-%d", a.Port))}
	a.Start(t)
	t.Cleanup(func() {
		a.Stop()
		if t.Failed() {
			t.Logf("apiserver %d logs:\n%s", a.Port, tail(a.logs.String(), 60))
		}
	})
	return a
}

// Kubeconfig is the admin kubeconfig this API server wrote.
func (a *APIServer) Kubeconfig() string {
	return filepath.Join(a.pkiDir, fmt.Sprintf("kubeconfig-%d", a.Port))
}

// Start (re)starts the process and waits for /readyz.
func (a *APIServer) Start(t testing.TB) {
	t.Helper()
	a.cmd = exec.Command(Binary(t), a.args...)
	a.cmd.Stdout, a.cmd.Stderr = a.logs, a.logs
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a.done = make(chan struct{})
	go func() { _ = a.cmd.Wait(); close(a.done) }()
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // readiness probe only
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := client.Get(a.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-a.done:
			t.Fatalf("apiserver exited:\n%s", tail(a.logs.String(), 40))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("apiserver not ready:\n%s", tail(a.logs.String(), 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Kill sends SIGKILL and waits.
func (a *APIServer) Kill() {
	if a.cmd != nil && a.cmd.Process != nil {
		_ = a.cmd.Process.Kill()
		<-a.done
	}
}

// Stop sends SIGTERM and waits.
func (a *APIServer) Stop() {
	if a.cmd == nil || a.cmd.Process == nil {
		return
	}
	select {
	case <-a.done:
		return
	default:
	}
	_ = a.cmd.Process.Signal(os.Interrupt)
	select {
	case <-a.done:
	case <-time.After(20 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.done
	}
}

// Logs returns the process output so far.
func (a *APIServer) Logs() string { return a.logs.String() }

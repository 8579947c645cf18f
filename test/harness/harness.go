// Package harness starts real kubebus processes for end-to-end tests and
// runs the stock kubectl against them. Tests that use it are named
// TestIntegration... and skip under -short.
package harness

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebus/kubebus/apiserver/pki"
	"github.com/kubebus/kubebus/bus"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Binary returns the kubebus binary: $KUBEBUS_BIN, or one built once per test
// process with the pause program (kubebus-pause) beside it, where the kubelet
// looks for it.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("KUBEBUS_BIN"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, err := os.MkdirTemp("", "kubebus-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "kubebus")
		cmd := exec.Command("go", "build", "-o", buildPath, "./cmd/kubebus")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building kubebus: %v\n%s", err, out)
			return
		}
		// The pause program of the pod sandboxes, which the kubelet finds
		// beside its executable (as `make build` puts it).
		cmd = exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(dir, "kubebus-pause"), "./cmd/kubebus-pause")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building kubebus-pause: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// SkipShort skips an integration test under -short.
func SkipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: skipped under -short")
	}
}

// Server is a running `kubebus server` process.
type Server struct {
	Dir        string
	Kubeconfig string
	URL        string
	NATSURL    string
	args       []string
	cmd        *exec.Cmd
	done       chan struct{}
	logs       *lockedBuffer
	mu         sync.Mutex
}

// EtcdTLS is what a test presents to the server's embedded etcd, which
// requires a certificate from its own CA: the API server's etcd client
// certificate, trusting the etcd CA.
func (s *Server) EtcdTLS(t testing.TB) *tls.Config {
	t.Helper()
	f := pki.EtcdFiles(filepath.Join(s.Dir, "pki"))
	cert, err := tls.LoadX509KeyPair(f.APIServerClientCertFile, f.APIServerClientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(f.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatalf("no certificate in %s", f.CAFile)
	}
	return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

// EtcdFlags are the `kubebus apiserver` flags that reach the server's
// embedded etcd.
func (s *Server) EtcdFlags() []string {
	f := pki.EtcdFiles(filepath.Join(s.Dir, "pki"))
	return []string{"--etcd-cafile", f.CAFile, "--etcd-certfile", f.APIServerClientCertFile, "--etcd-keyfile", f.APIServerClientKeyFile}
}

// BusURL returns the embedded NATS URL the server printed.
func (s *Server) BusURL(t testing.TB) string {
	t.Helper()
	var u string
	Eventually(t, 10*time.Second, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if u = s.NATSURL; u == "" {
			return fmt.Errorf("the server has not printed its bus URL")
		}
		return nil
	})
	return u
}

// BusCredentials issues user (in groups) a client certificate from the
// server's CA (DIR/pki) and returns them as bus credentials.
func (s *Server) BusCredentials(t testing.TB, user string, groups ...string) bus.Credentials {
	t.Helper()
	return busCredentials(t, filepath.Join(s.Dir, "pki"), user, groups...)
}

// BusConnect connects to the server's bus as user (in groups), e.g. as
// the admin: BusConnect(t, "e2e", "system:masters").
func (s *Server) BusConnect(t testing.TB, user string, groups ...string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return BusConnectAs(t, s.BusURL(t), s.BusCredentials(t, user, groups...))
}

// BusFlags are the flags that point a kubebus command (the tap, a
// component) at the server's bus as the admin: --nats-url and the admin's
// certificate and the CA.
func (s *Server) BusFlags(t testing.TB) []string {
	t.Helper()
	dir := filepath.Join(s.Dir, "pki")
	return []string{"--nats-url", s.BusURL(t), "--nats-ca-file", filepath.Join(dir, "ca.crt"),
		"--nats-cert-file", filepath.Join(dir, "admin.crt"), "--nats-key-file", filepath.Join(dir, "admin.key")}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var (
	readyLine = regexp.MustCompile(`kubebus is ready at (https://\S+)`)
	busLine   = regexp.MustCompile(`^\s+bus: (nats://\S+)`)
)

// StartServer starts `kubebus server` on free loopback ports with a fresh
// data directory (or dir, when given) and waits until it is ready.
func StartServer(t testing.TB, dir string, extraArgs ...string) *Server {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	s := &Server{Dir: dir, Kubeconfig: filepath.Join(dir, "kubeconfig"), logs: &lockedBuffer{}}
	// No local node unless the test asks for one with --disable-kubelet=false
	// (a later flag wins).
	// Profiling on, for the benchmarks' profiles (a later --profiling=false
	// turns it off).
	s.args = append([]string{"server", "--data-dir", dir, "--secure-port", "0",
		"--etcd-client-port", "0", "--etcd-peer-port", "0", "--nats-port", "-1", "--disable-kubelet", "--profiling"}, extraArgs...)
	// The cluster DNS forwards names outside the cluster to the host's
	// resolvers by default; a test's pods must reach nothing the test did
	// not start, so unless it names an upstream of its own, the DNS gets a
	// loopback port where nothing answers (the discard port).
	if !slices.ContainsFunc(extraArgs, func(a string) bool { return strings.HasPrefix(a, "--dns-upstream") }) {
		s.args = append(s.args, "--dns-upstream", "127.0.0.1:9")
	}
	s.start(t)
	t.Cleanup(func() {
		s.Stop(t)
		if t.Failed() {
			t.Logf("kubebus server logs:\n%s", tail(s.logs.String(), 80))
		}
	})
	return s
}

func (s *Server) start(t testing.TB) {
	t.Helper()
	s.cmd = exec.Command(Binary(t), s.args...)
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting kubebus server: %v", err)
	}
	s.done = make(chan struct{})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			s.logs.Write([]byte(line + "\n"))
			if m := busLine.FindStringSubmatch(line); m != nil {
				s.mu.Lock()
				s.NATSURL = m[1]
				s.mu.Unlock()
			}
			if m := readyLine.FindStringSubmatch(line); m != nil {
				select {
				case ready <- m[1]:
				default:
				}
			}
		}
	}()
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	select {
	case s.URL = <-ready:
	case <-s.done:
		t.Fatalf("kubebus server exited before it was ready:\n%s", tail(s.logs.String(), 60))
	case <-time.After(90 * time.Second):
		t.Fatalf("kubebus server not ready after 90s:\n%s", tail(s.logs.String(), 60))
	}
}

// Stop ends the server with SIGTERM and waits for it.
func (s *Server) Stop(t testing.TB) {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// Kill ends the server with SIGKILL.
func (s *Server) Kill(t testing.TB) {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// Restart stops and starts the server on the same data directory.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop(t)
	s.start(t)
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Logs returns what the server wrote so far.
func (s *Server) Logs() string { return s.logs.String() }

// RESTConfig loads the server's kubeconfig.
func (s *Server) RESTConfig(t testing.TB) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatalf("loading kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	return cfg
}

// Clientset returns a client-go clientset for the server.
func (s *Server) Clientset(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(s.RESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// HTTPClient returns an HTTP client that trusts the server and authenticates as admin.
func (s *Server) HTTPClient(t testing.TB) *http.Client {
	t.Helper()
	c, err := rest.HTTPClientFor(s.RESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Eventually polls cond until it returns nil or the deadline passes.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %v: %v", timeout, err)
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-context.Background().Done():
		}
	}
}

func tail(s string, lines int) string {
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

var _ = io.Discard

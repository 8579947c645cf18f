package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Process is a kubebus component running as its own process.
type Process struct {
	Args []string
	cmd  *exec.Cmd
	done chan struct{}
	logs *lockedBuffer
}

// StartProcess runs `kubebus <args...>` until the test ends.
func StartProcess(t testing.TB, args ...string) *Process {
	t.Helper()
	p := &Process{Args: args, logs: &lockedBuffer{}}
	p.Start(t)
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("kubebus %s logs:\n%s", args[0], tail(p.logs.String(), 60))
		}
	})
	return p
}

// StartControllerManager runs `kubebus controller-manager` against the
// server with extra flags.
func StartControllerManager(t testing.TB, s *Server, extra ...string) *Process {
	t.Helper()
	return StartProcess(t, append([]string{"controller-manager", "--kubeconfig", s.Kubeconfig, "--nats-url", s.BusURL(t)}, extra...)...)
}

// StartHollowNodes runs `kubebus kubelet --simulate=n` against the server
// with extra flags, handing it the server's CA certificate (DIR/pki/ca.crt)
// to verify the API server on the hollow nodes' log servers. Their serving
// certificate comes through a CertificateSigningRequest the process
// approves itself (it runs with the admin kubeconfig).
func StartHollowNodes(t testing.TB, s *Server, n int, extra ...string) *Process {
	t.Helper()
	pki := filepath.Join(s.Dir, "pki")
	return StartProcess(t, append([]string{"kubelet", "--kubeconfig", s.Kubeconfig, "--nats-url", s.BusURL(t), fmt.Sprint("--simulate=", n),
		"--client-ca-file", filepath.Join(pki, "ca.crt")}, extra...)...)
}

// Start (re)starts the process.
func (p *Process) Start(t testing.TB) {
	t.Helper()
	p.cmd = exec.Command(Binary(t), p.Args...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.done = make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(p.done) }()
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Kill sends SIGKILL and waits.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Stop sends SIGTERM and waits (SIGKILL after 20s).
func (p *Process) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.Kill()
	}
}

// Logs returns what the process printed so far.
func (p *Process) Logs() string { return p.logs.String() }

// NodeKubeconfig writes a kubeconfig for the server that authenticates as
// the kubelet of node name (system:node:NAME in system:nodes), with a
// client certificate `kubebus certs kubeconfig` issues from the server's
// CA, and returns its path.
func NodeKubeconfig(t testing.TB, s *Server, name string) string {
	t.Helper()
	return UserKubeconfig(t, s, "system:node:"+name, "system:nodes")
}

// UserKubeconfig writes a kubeconfig for the server that authenticates as
// user in groups (a component's identity, e.g. system:kube-scheduler),
// with a client certificate `kubebus certs kubeconfig` issues from the
// server's CA, and returns its path. The certificate is the component's
// bus identity too.
func UserKubeconfig(t testing.TB, s *Server, user string, groups ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "kubeconfig-"+strings.ReplaceAll(user, ":", "-"))
	args := []string{"certs", "kubeconfig", "--pki-dir", filepath.Join(s.Dir, "pki"), "--user", user, "--server", s.URL, "--out", out}
	for _, g := range groups {
		args = append(args, "--group", g)
	}
	if b, err := exec.Command(Binary(t), args...).CombinedOutput(); err != nil {
		t.Fatalf("kubebus certs kubeconfig: %v\n%s", err, b)
	}
	return out
}

// NoServiceAccounts is the flag a server started with
// --disable-controller-manager needs where its test creates pods: no
// controller makes the namespaces' default ServiceAccounts, which the
// ServiceAccount admission plugin requires of every pod, so the plugin is
// turned off, as upstream's integration tests run the API server.
const NoServiceAccounts = "--disable-admission-plugins=ServiceAccount"

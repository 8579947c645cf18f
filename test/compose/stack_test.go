//go:build compose

package compose

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubebus/kubebus/test/harness"
	"github.com/kubebus/kubebus/test/prereq"
)

// subnet is the stack's fixed network (docker-compose.yml): one stack at a
// time on a machine.
const subnet = "172.28.0.0/24"

// Stack is a running deploy/compose stack of the test's own project.
type Stack struct {
	Dir        string // deploy/compose
	Project    string
	Network    string // the compose network's docker name
	Kubeconfig string
	Port       int
	kubectl    string
	home       string
}

// composeDir is deploy/compose of this checkout.
func composeDir(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	d, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", "deploy", "compose"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// StartStack builds the images (up.sh runs build-images.sh with BIN set to
// the directory of the kubebus binary under test), brings the stack up
// under the project kubebus-test-<pid>, waits for two Ready nodes, and
// registers a cleanup that takes everything down and checks that no
// container, network or volume of the project is left.
func StartStack(t *testing.T) *Stack {
	t.Helper()
	harness.SkipShort(t)
	for _, tool := range []string{"docker", "docker-compose"} {
		if _, err := exec.LookPath(tool); err != nil {
			prereq.Missing(t, "%s not on PATH: the compose test needs a Docker engine and docker-compose (Debian packages docker.io, docker-compose; make deps does not install them)", tool)
		}
	}
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		prereq.Missing(t, "no Docker engine answers: %v: %s", err, out)
	}
	bin := harness.Binary(t)
	if _, err := os.Stat(filepath.Join(filepath.Dir(bin), "kubebus-pause")); err != nil {
		t.Fatalf("kubebus-pause must sit beside %s (make build puts it there): %v", bin, err)
	}
	s := &Stack{
		Dir:     composeDir(t),
		Project: fmt.Sprintf("kubebus-test-%d", os.Getpid()),
		kubectl: harness.Kubectl(t),
		home:    t.TempDir(),
	}
	s.Network = s.Project + "_kubebus"
	s.Kubeconfig = filepath.Join(s.Dir, "kubeconfig")
	if p := os.Getenv("KUBEBUS_COMPOSE_EXISTING"); p != "" {
		// For working on the tests: a stack already up (make compose-up
		// with KUBEBUS_COMPOSE_PROJECT=p), used as it is and left running.
		s.Project, s.Network = p, p+"_kubebus"
		t.Logf("using the running stack %s (KUBEBUS_COMPOSE_EXISTING); it is not taken down", p)
		return s
	}
	s.Port = harness.FreePort(t)
	if owner := subnetOwner(t); owner != "" {
		t.Fatalf("the stack's subnet %s is taken by docker network %q: another compose stack runs here "+
			"(make compose-down, or docker-compose -p PROJECT down -v); only one stack can run at a time", subnet, owner)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, ".state")); err == nil {
		t.Fatalf("%s/.state exists: another stack's certificates (make compose-down removes them)", s.Dir)
	}
	t.Cleanup(func() { s.Down(t) })

	start := time.Now()
	cmd := exec.Command("bash", filepath.Join(s.Dir, "up.sh"))
	cmd.Env = append(os.Environ(),
		"BIN="+filepath.Dir(bin),
		"KUBEBUS_COMPOSE_PROJECT="+s.Project,
		"KUBEBUS_COMPOSE_PORT="+strconv.Itoa(s.Port),
		"KUBEBUS_COMPOSE_TIMEOUT=300",
		"KUBECTL="+s.kubectl,
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("up.sh: %v\n%s\n%s", err, out, s.logs(t, 40))
	}
	t.Logf("stack %s up, two Ready nodes after %s", s.Project, time.Since(start).Round(time.Second))
	return s
}

// subnetOwner names the docker network that holds the stack's subnet, or "".
func subnetOwner(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("docker", "network", "ls", "-q").Output()
	if err != nil {
		t.Fatalf("docker network ls: %v", err)
	}
	for _, id := range strings.Fields(string(out)) {
		b, err := exec.Command("docker", "network", "inspect", "--format", "{{.Name}}{{range .IPAM.Config}} {{.Subnet}}{{end}}", id).Output()
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		for _, sn := range f[1:] {
			if sn == subnet {
				return f[0]
			}
		}
	}
	return ""
}

// Down removes the project's containers, network and volumes and the
// certificates, then fails the test if any of them is left.
func (s *Stack) Down(t testing.TB) {
	t.Helper()
	if t.Failed() {
		t.Logf("logs before teardown:\n%s", s.logs(t, 60))
	}
	// Unpause anything a failed step left paused: down cannot stop it.
	for _, c := range s.containers(t, true) {
		_ = exec.Command("docker", "unpause", c).Run()
	}
	cmd := exec.Command("bash", filepath.Join(s.Dir, "down.sh"))
	cmd.Env = append(os.Environ(), "KUBEBUS_COMPOSE_PROJECT="+s.Project)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("down.sh: %v\n%s", err, out)
	}
	if c := s.containers(t, true); len(c) > 0 {
		t.Errorf("containers of %s left after down: %v", s.Project, c)
	}
	label := "label=com.docker.compose.project=" + s.Project
	for _, kind := range []string{"network", "volume"} {
		out, err := exec.Command("docker", kind, "ls", "-q", "--filter", label).Output()
		if err != nil {
			t.Errorf("docker %s ls: %v", kind, err)
		} else if left := strings.Fields(string(out)); len(left) > 0 {
			t.Errorf("%ss of %s left after down: %v", kind, s.Project, left)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir, ".state")); err == nil {
		t.Errorf("%s/.state left after down", s.Dir)
	}
}

// containers lists the project's container names (stopped ones too with all).
func (s *Stack) containers(t testing.TB, all bool) []string {
	t.Helper()
	args := []string{"ps", "--format", "{{.Names}}", "--filter", "label=com.docker.compose.project=" + s.Project}
	if all {
		args = append(args, "-a")
	}
	out, err := exec.Command("docker", args...).Output()
	if err != nil {
		t.Errorf("docker ps: %v", err)
		return nil
	}
	return strings.Fields(string(out))
}

// Container is the docker name of a service's container, found by its
// compose labels (docker-compose 1.x names it project_service_1, docker
// compose v2 project-service-1).
func (s *Stack) Container(service string) string {
	out, err := exec.Command("docker", "ps", "-a", "-q", "--no-trunc",
		"--filter", "label=com.docker.compose.project="+s.Project,
		"--filter", "label=com.docker.compose.service="+service).Output()
	if f := strings.Fields(string(out)); err == nil && len(f) == 1 {
		return f[0]
	}
	return s.Project + "_" + service + "_1"
}

// Docker runs docker with args and returns its output; errors fail t.
func (s *Stack) Docker(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// logs is the tail of every container's log, for a failure message.
func (s *Stack) logs(t testing.TB, lines int) string {
	var b strings.Builder
	for _, c := range s.containers(t, true) {
		out, _ := exec.Command("docker", "logs", "--tail", strconv.Itoa(lines), c).CombinedOutput()
		fmt.Fprintf(&b, "=== %s\n%s\n", c, out)
	}
	return b.String()
}

// Kubectl runs the stock kubectl against the load balancer.
func (s *Stack) Kubectl(t testing.TB, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(s.kubectl, append([]string{"--kubeconfig", s.Kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.Kubeconfig, "HOME="+s.home)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), &harness.KubectlError{Args: args, Err: err, Stderr: errb.String(), Stdout: out.String()}
	}
	return out.String(), nil
}

// MustKubectl is Kubectl that fails t on error.
func (s *Stack) MustKubectl(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := s.Kubectl(t, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// RESTConfig is the admin's client configuration through the load balancer.
func (s *Stack) RESTConfig(t testing.TB) *rest.Config {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = 500, 1000
	rc.Timeout = 15 * time.Second
	return rc
}

// Clientset is the admin's clientset through the load balancer.
func (s *Stack) Clientset(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(s.RESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// ImportImage imports a docker-archive into both nodes' containerd.
func (s *Stack) ImportImage(t testing.TB, tar string) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(s.Dir, "import-image.sh"), tar)
	cmd.Env = append(os.Environ(), "KUBEBUS_COMPOSE_PROJECT="+s.Project)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("import-image.sh %s: %v\n%s", tar, err, out)
	}
}

// Kill sends SIGKILL to a service's container with its restart policy
// off, so it stays down until Start.
func (s *Stack) Kill(t testing.TB, service string) {
	t.Helper()
	c := s.Container(service)
	s.Docker(t, "update", "--restart=no", c)
	s.Docker(t, "kill", "--signal", "KILL", c)
}

// Start starts a killed service's container again and restores its
// restart policy.
func (s *Stack) Start(t testing.TB, service string) {
	t.Helper()
	c := s.Container(service)
	s.Docker(t, "start", c)
	s.Docker(t, "update", "--restart=unless-stopped", c)
}

// Disconnect takes a service's container off the stack's network.
func (s *Stack) Disconnect(t testing.TB, service string) {
	t.Helper()
	s.Docker(t, "network", "disconnect", s.Network, s.Container(service))
}

// Connect puts it back with its address.
func (s *Stack) Connect(t testing.TB, service, ip string) {
	t.Helper()
	s.Docker(t, "network", "connect", "--ip", ip, s.Network, s.Container(service))
}

// Running reports whether a service's container runs.
func (s *Stack) Running(t testing.TB, service string) bool {
	t.Helper()
	out, err := exec.Command("docker", "inspect", "--format", "{{.State.Running}}", s.Container(service)).Output()
	return err == nil && strings.TrimSpace(string(out)) == "true"
}

// eventually polls cond every 200ms until it returns nil or timeout passes,
// and returns how long it took; on timeout it fails t with cond's last error.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() error) time.Duration {
	t.Helper()
	start := time.Now()
	var err error
	for {
		if err = cond(); err == nil {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// decodeLines decodes one JSON value per line of out.
func decodeLines[T any](out string) ([]T, error) {
	var res []T
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var v T
		if err := dec.Decode(&v); err != nil {
			return res, err
		}
		res = append(res, v)
	}
	return res, nil
}

package containerd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubebus/kubebus/kubelet/cni"
	"github.com/kubebus/kubebus/test/harness/netns"
	"github.com/kubebus/kubebus/test/harness/ociimage"
	"github.com/kubebus/kubebus/test/prereq"
)

// requireContainerd skips unless the test can run containers: root,
// containerd, runc, the CNI plugins and a static busybox for the image.
func requireContainerd(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test skipped under -short")
	}
	if os.Geteuid() != 0 {
		prereq.Missing(t, "needs root to run containerd, runc and network namespaces")
	}
	for _, bin := range []string{"containerd", "containerd-shim-runc-v2", "runc"} {
		if _, err := exec.LookPath(bin); err != nil {
			prereq.Missing(t, "%s not on PATH (Debian packages containerd and runc)", bin)
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		if _, err := os.Stat("/opt/cni/bin/bridge"); err != nil {
			prereq.Missing(t, "CNI plugins not installed (Debian package containernetworking-plugins)")
		}
	}
	if _, err := ociimage.BusyboxImage(); err != nil {
		prereq.Missing(t, "%v", err)
	}
}

// testEnv is a containerd of the test's own with a runtime on it, and a
// node network namespace of the test's own holding the pod network.
type testEnv struct {
	dir     string
	sup     *Supervisor
	rt      *Runtime
	net     *cni.Network
	cfg     Config
	bridge  string
	podCIDR netip.Prefix
	node    *netns.Node
	nodeIP  string
	stops   []func() // stop the supervisors started, in order
	rts     []*Runtime
}

// envOptions vary the environment.
type envOptions struct {
	podCIDR string
	bridge  string
	dir     string    // reuse a directory (default: a new one removed at the end)
	node    *testNode // reuse a node network namespace (default: a new one)
}

// testNode is a node network namespace with an address.
type testNode struct {
	*netns.Node
	IP string
}

// newTestNode creates a node network namespace whose address (on a veth
// pair inside it, with the default route) is 198.18.<third octet of the
// pod CIDR>.2; the namespace is removed when the test ends.
func newTestNode(t *testing.T, podCIDR string) *testNode {
	t.Helper()
	p := netip.MustParsePrefix(podCIDR)
	ip := fmt.Sprintf("198.18.%d.2", p.Addr().As4()[2])
	n := netns.New(t)
	n.AddAddress(t, "node0", ip+"/24")
	return &testNode{Node: n, IP: ip}
}

// startEnv starts containerd under a short directory in /tmp (the socket
// path must stay under 108 bytes), a node network namespace (unless given),
// a CNI network whose plugins run in it and a Runtime whose host-network
// pods join it. At the end of the test it removes every sandbox and
// container, stops containerd, checks that the host's network namespace
// holds no trace of the pod network, removes the directory and, after
// that, the node's namespace.
func startEnv(t *testing.T, o envOptions) *testEnv {
	t.Helper()
	if o.podCIDR == "" {
		o.podCIDR = "10.244.77.0/24"
	}
	if o.bridge == "" {
		o.bridge = fmt.Sprintf("kbr%d", os.Getpid()%100000)
	}
	if o.node == nil {
		o.node = newTestNode(t, o.podCIDR) // removed after e.cleanup
	}
	dir := o.dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("/tmp", "kb-"); err != nil {
			t.Fatal(err)
		}
	}
	e := &testEnv{dir: dir, bridge: o.bridge, podCIDR: netip.MustParsePrefix(o.podCIDR), node: o.node.Node, nodeIP: o.node.IP}
	t.Cleanup(func() { e.cleanup(t, o.dir == "") })
	e.startContainerd(t)
	var err error
	e.net, err = cni.New(cni.Config{PodCIDR: o.podCIDR, BridgeName: o.bridge, NetworkName: "kbtest", Dir: filepath.Join(dir, "cni"), NetNS: e.node.Path})
	if err != nil {
		t.Fatal(err)
	}
	e.cfg = Config{
		PauseBinary: buildPause(t, dir),
		Address:     e.sup.Address(),
		Dir:         filepath.Join(dir, "rt"),
		Network:     e.net,
		RuncRoot:    filepath.Join(dir, "runc"),
		Namespace:   testNamespace(dir),
		HostNetNS:   e.node.Path,
		Logger:      testLogger(t),
	}
	e.rt = e.newRuntime(t)
	return e
}

// buildPause builds the pause program (cmd/kubebus-pause) into dir, static
// as `make build` does, unless it is there, and returns its path.
func buildPause(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, PauseBinaryName)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", p, "github.com/kubebus/kubebus/cmd/kubebus-pause")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the pause program: %v\n%s", err, out)
	}
	return p
}

// httpGet fetches url from the node's network namespace.
func (e *testEnv) httpGet(url string) (string, error) { return httpGetFrom(e.node.Path, url) }

// requireHostClean fails the test if the host's network namespace holds
// the env's bridge, an address of its pod CIDR or a packet rule naming one.
func (e *testEnv) requireHostClean(t *testing.T) {
	t.Helper()
	tr, err := netns.HostTraces(e.bridge, e.podCIDR)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Empty() {
		t.Errorf("the host's network namespace holds traces of the pod network %s: %s", e.podCIDR, tr)
	}
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startContainerd starts a supervisor on the env's directory; cleanup stops
// it.
func (e *testEnv) startContainerd(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sup, err := StartSupervisor(ctx, SupervisorConfig{Dir: filepath.Join(e.dir, "ctrd"), Logger: testLogger(t)})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	e.sup = sup
	e.stops = append(e.stops, func() {
		cancel()
		sup.Wait()
	})
}

// newRuntime makes a Runtime on the env's containerd and directories, as a
// restarted kubelet would.
func (e *testEnv) newRuntime(t *testing.T) *Runtime {
	t.Helper()
	rt, err := New(context.Background(), e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.rts = append(e.rts, rt)
	return rt
}

// cleanup removes the sandboxes and containers, stops containerd, deletes
// the bridge and the directory, and fails the test if a process started
// under the directory (a shim) is left, which it then kills.
func (e *testEnv) cleanup(t *testing.T, removeDir bool) {
	ctx := context.Background()
	if e.rt != nil {
		sbs, err := e.rt.ListPodSandboxes(ctx)
		if err != nil {
			t.Errorf("cleanup: %v", err)
		}
		for _, s := range sbs {
			if err := e.rt.RemovePodSandbox(ctx, s.ID); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
		cs, err := e.rt.ListContainers(ctx)
		if err != nil {
			t.Errorf("cleanup: %v", err)
		}
		for _, c := range cs {
			if err := e.rt.RemoveContainer(ctx, c.ID); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	}
	for _, rt := range e.rts {
		rt.Close()
	}
	for _, stop := range e.stops {
		stop()
	}
	for _, pid := range processesUnder(e.dir) {
		t.Errorf("cleanup: process %d still runs from %s; killing it", pid, e.dir)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	removeNamespaceCgroups(t, testNamespace(e.dir))
	e.requireHostClean(t)
	if removeDir {
		if err := os.RemoveAll(e.dir); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
}

// processesUnder returns the PIDs of processes whose command line names
// dir (containerd and its shims started by this test).
func processesUnder(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(dir+"/")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// importBusybox imports the busybox image built from the host's binary.
func (e *testEnv) importBusybox(t *testing.T) {
	t.Helper()
	archive, err := ociimage.BusyboxArchive()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.ImportImage(context.Background(), bytes.NewReader(archive)); err != nil {
		t.Fatal(err)
	}
}

// eventually calls f until it succeeds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %s: %v", what, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// httpGetFrom fetches url from the network namespace at nsPath ("": the
// caller's) and returns the body.
func httpGetFrom(nsPath, url string) (string, error) {
	c := http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DialContext: cni.Dialer(nsPath), DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(b), errors.New(resp.Status)
	}
	return string(b), nil
}

// killPID sends SIGKILL to a process the test started.
func killPID(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("no process (pid %d)", pid)
	}
	return syscall.Kill(pid, syscall.SIGKILL)
}

// isCgroup2 reports whether /sys/fs/cgroup is the unified hierarchy.
func isCgroup2() bool {
	var st unix.Statfs_t
	return unix.Statfs("/sys/fs/cgroup", &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}

// testNamespace is the containerd namespace of the tests using dir: the
// containers' cgroups live under /<namespace>/, which the test removes.
func testNamespace(dir string) string {
	return "kbtest-" + strings.TrimPrefix(filepath.Base(dir), "kb-")
}

// removeNamespaceCgroups removes the (empty) parent cgroups runc created for
// the namespace's containers.
func removeNamespaceCgroups(t *testing.T, ns string) {
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", ns))
	if isCgroup2() {
		dirs = []string{filepath.Join("/sys/fs/cgroup", ns)}
	}
	for _, d := range dirs {
		if err := syscall.Rmdir(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("removing cgroup %s: %v", d, err)
		}
	}
}

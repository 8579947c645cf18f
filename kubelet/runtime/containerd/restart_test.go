package containerd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubebus/kubebus/kubelet/cni"
	"github.com/kubebus/kubebus/kubelet/runtime"
	"github.com/kubebus/kubebus/test/harness/ociimage"
)

// Environment of the helper process that plays a kubelet which dies.
const (
	helperDirEnv    = "KUBEBUS_TEST_KUBELET_DIR"
	helperBridgeEnv = "KUBEBUS_TEST_KUBELET_BRIDGE"
	helperNetNSEnv  = "KUBEBUS_TEST_KUBELET_NETNS"
	helperPauseEnv  = "KUBEBUS_TEST_KUBELET_PAUSE"
	helperCIDR      = "10.244.79.0/24"
)

// TestHelperKubeletProcess is not a test: TestIntegrationKubeletRestart runs
// the test binary with it as a kubelet that starts containerd, runs a pod,
// prints its IDs and exits without cleaning anything up.
func TestHelperKubeletProcess(t *testing.T) {
	dir := os.Getenv(helperDirEnv)
	if dir == "" {
		t.Skip("helper process for TestIntegrationKubeletRestart")
	}
	ctx := context.Background()
	fail := func(err error) {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	sup, err := StartSupervisor(ctx, SupervisorConfig{Dir: filepath.Join(dir, "ctrd")})
	if err != nil {
		fail(err)
	}
	nodeNS := os.Getenv(helperNetNSEnv)
	if nodeNS == "" {
		fail(errors.New(helperNetNSEnv + " is not set: the helper must not set up pod networking in the host's namespace"))
	}
	network, err := cni.New(cni.Config{PodCIDR: helperCIDR, BridgeName: os.Getenv(helperBridgeEnv), NetworkName: "kbtest", Dir: filepath.Join(dir, "cni"), NetNS: nodeNS})
	if err != nil {
		fail(err)
	}
	rt, err := New(ctx, Config{PauseBinary: os.Getenv(helperPauseEnv), Address: sup.Address(), Dir: filepath.Join(dir, "rt"), Network: network, RuncRoot: filepath.Join(dir, "runc"), Namespace: testNamespace(dir), HostNetNS: nodeNS})
	if err != nil {
		fail(err)
	}
	archive, err := ociimage.BusyboxArchive()
	if err != nil {
		fail(err)
	}
	if _, err := rt.ImportImage(ctx, bytes.NewReader(archive)); err != nil {
		fail(err)
	}
	sb, err := rt.RunPodSandbox(ctx, runtime.SandboxConfig{PodUID: "uid-restart", Name: "survivor", Namespace: "default"})
	if err != nil {
		fail(err)
	}
	id, err := rt.CreateContainer(ctx, sb.ID, runtime.ContainerConfig{
		Name: "httpd", Image: "busybox",
		Command: []string{"sh", "-c", "echo alive > /tmp/index.html; exec httpd -f -p 8080 -h /tmp"},
		LogPath: filepath.Join(dir, "logs", "httpd.log"),
	})
	if err != nil {
		fail(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		fail(err)
	}
	exited, err := rt.CreateContainer(ctx, sb.ID, runtime.ContainerConfig{Name: "done", Image: "busybox", Command: []string{"sh", "-c", "exit 5"}})
	if err != nil {
		fail(err)
	}
	if err := rt.StartContainer(ctx, exited); err != nil {
		fail(err)
	}
	fmt.Println("SANDBOX", sb.ID, sb.IP)
	fmt.Println("CONTAINER", id)
	fmt.Println("EXITED", exited)
	os.Exit(0) // die like a crashed kubelet: no cleanup, containerd gets SIGTERM
}

func TestIntegrationKubeletRestart(t *testing.T) {
	requireContainerd(t)
	dir, err := os.MkdirTemp("/tmp", "kb-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bridge := fmt.Sprintf("kbk%d", os.Getpid()%100000)
	// The node's namespace outlives both kubelets; removed after startEnv's
	// cleanup, with what the helper left in it.
	node := newTestNode(t, helperCIDR)
	// Kill and unmount what the helper leaves if the test fails before
	// startEnv.
	t.Cleanup(func() {
		for _, pid := range processesUnder(dir) {
			killPID(pid)
		}
		pods, _ := filepath.Glob(filepath.Join(dir, "rt", "netns", "*"))
		for _, p := range pods {
			cni.RemoveNetNS(p)
		}
	})

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperKubeletProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperDirEnv+"="+dir, helperBridgeEnv+"="+bridge, helperNetNSEnv+"="+node.Path, helperPauseEnv+"="+buildPause(t, dir))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper kubelet: %v\n%s", err, out)
	}
	var sandboxID, podIP, containerID, exitedID string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "SANDBOX":
			sandboxID, podIP = f[1], f[2]
		case len(f) == 2 && f[0] == "CONTAINER":
			containerID = f[1]
		case len(f) == 2 && f[0] == "EXITED":
			exitedID = f[1]
		}
	}
	if sandboxID == "" || containerID == "" || exitedID == "" {
		t.Fatalf("helper kubelet printed no IDs:\n%s", out)
	}

	// The kubelet is dead and its containerd follows it (SIGTERM on parent
	// death); the container runs on under its shim.
	eventually(t, 20*time.Second, "the helper's containerd exits", func() error {
		for _, pid := range processesUnder(dir) {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); bytes.HasPrefix(b, []byte("containerd\x00")) {
				return fmt.Errorf("containerd %d still runs", pid)
			}
		}
		return nil
	})
	url := fmt.Sprintf("http://%s/index.html", net.JoinHostPort(podIP, "8080"))
	eventually(t, 20*time.Second, "httpd answers without kubelet or containerd", func() error {
		body, err := httpGetFrom(node.Path, url)
		if err == nil && body != "alive\n" {
			err = fmt.Errorf("body %q", body)
		}
		return err
	})

	// A new kubelet starts containerd on the same directories and finds the
	// pod.
	e := startEnv(t, envOptions{dir: dir, bridge: bridge, podCIDR: helperCIDR, node: node})
	ctx := context.Background()
	sbs, err := e.rt.ListPodSandboxes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sb := findSandbox(sbs, sandboxID)
	if sb == nil || sb.State != runtime.SandboxReady || sb.IP != podIP || sb.Name != "survivor" || sb.PodUID != "uid-restart" {
		t.Fatalf("sandboxes after the restart: %+v", sbs)
	}
	cs, err := e.rt.ListContainers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 {
		t.Errorf("containers after the restart: %+v; want httpd and the exited one (the pause container is the sandbox's)", cs)
	}
	if c := findContainer(cs, containerID); c == nil || c.State != runtime.ContainerRunning || c.Name != "httpd" || c.SandboxID != sandboxID {
		t.Errorf("httpd after the restart: %+v", c)
	}
	if c := findContainer(cs, exitedID); c == nil || c.State != runtime.ContainerExited || c.ExitCode != 5 || c.Reason != "Error" {
		t.Errorf("exited container after the restart: %+v", c)
	}
	res, err := e.rt.ExecSync(ctx, containerID, []string{"cat", "/tmp/index.html"}, 10*time.Second)
	if err != nil || string(res.Stdout) != "alive\n" {
		t.Errorf("exec after the restart: %q %v", res.Stdout, err)
	}
	if err := e.rt.StopContainer(ctx, containerID, time.Second); err != nil {
		t.Fatal(err)
	}
	if c, err := e.rt.ContainerStatus(ctx, containerID); err != nil || c.State != runtime.ContainerExited || c.ExitCode != 137 {
		t.Errorf("httpd stopped by the new kubelet: %+v %v", c, err)
	}
	if _, err := e.httpGet(url); err == nil {
		t.Error("httpd still answers after it was stopped")
	}
	if err := e.rt.RemovePodSandbox(ctx, sandboxID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cni", "ipam", "kbtest", podIP)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("IP %s still allocated after removal: %v", podIP, err)
	}
}

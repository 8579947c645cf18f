package containerd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// containerExit waits until the container has exited and returns its status.
func containerExit(t *testing.T, rt *Runtime, id string) runtime.Container {
	t.Helper()
	var c runtime.Container
	eventually(t, 30*time.Second, "container "+id+" exits", func() error {
		var err error
		if c, err = rt.ContainerStatus(context.Background(), id); err != nil {
			return err
		}
		if c.State != runtime.ContainerExited {
			return fmt.Errorf("state %s", c.State)
		}
		return nil
	})
	return c
}

// runContainer creates and starts a busybox container in the sandbox.
func runContainer(t *testing.T, rt *Runtime, sb runtime.Sandbox, cfg runtime.ContainerConfig) string {
	t.Helper()
	ctx := context.Background()
	if cfg.Image == "" {
		cfg.Image = "busybox"
	}
	id, err := rt.CreateContainer(ctx, sb.ID, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id
}

func findContainer(cs []runtime.Container, id string) *runtime.Container {
	for i := range cs {
		if cs[i].ID == id {
			return &cs[i]
		}
	}
	return nil
}

func findSandbox(ss []runtime.Sandbox, id string) *runtime.Sandbox {
	for i := range ss {
		if ss[i].ID == id {
			return &ss[i]
		}
	}
	return nil
}

func TestIntegrationPodLifecycle(t *testing.T) {
	requireContainerd(t)
	e := startEnv(t, envOptions{podCIDR: "10.244.77.0/24"})
	ctx := context.Background()
	rt := e.rt
	e.importBusybox(t)

	hostPort := 30000 + os.Getpid()%20000
	sb, err := rt.RunPodSandbox(ctx, runtime.SandboxConfig{
		PodUID: "uid-1", Name: "web", Namespace: "default", Hostname: "web-host",
		PortMappings: []runtime.PortMapping{{Protocol: "TCP", ContainerPort: 8080, HostPort: int32(hostPort)}},
		Labels:       map[string]string{"app": "web"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if sb.State != runtime.SandboxReady || sb.PodUID != "uid-1" || sb.Labels["app"] != "web" {
		t.Errorf("sandbox %+v", sb)
	}
	ip, err := netip.ParseAddr(sb.IP)
	if err != nil || !netip.MustParsePrefix("10.244.77.0/24").Contains(ip) {
		t.Fatalf("sandbox IP %q not in the pod CIDR", sb.IP)
	}

	logDir := filepath.Join(e.dir, "logs", "web")
	webLog := filepath.Join(logDir, "httpd", "0.log")
	web := runContainer(t, rt, sb, runtime.ContainerConfig{
		Name:    "httpd",
		Command: []string{"sh", "-c", "echo hello-$GREETING > /tmp/index.html; echo starting; exec httpd -f -v -p 8080 -h /tmp"},
		Env:     []runtime.KeyValue{{Key: "GREETING", Value: "kubebus"}},
		LogPath: webLog,
		Labels:  map[string]string{"role": "server"},
		// Limits, checked in the cgroup below.
		MemoryLimitBytes: 64 << 20,
		CPUQuota:         50000,
		CPUPeriod:        100000,
		CPUShares:        512,
	})

	t.Run("reachable over the pod IP from the node", func(t *testing.T) {
		eventually(t, 20*time.Second, "GET pod:8080", func() error {
			body, err := e.httpGet(fmt.Sprintf("http://%s/index.html", net.JoinHostPort(sb.IP, "8080")))
			if err == nil && body != "hello-kubebus\n" {
				return fmt.Errorf("body %q", body)
			}
			return err
		})
	})
	t.Run("reachable over the hostPort on the node", func(t *testing.T) {
		for _, host := range []string{"127.0.0.1", e.nodeIP} {
			eventually(t, 10*time.Second, "GET "+host+":hostPort", func() error {
				body, err := e.httpGet(fmt.Sprintf("http://%s/index.html", net.JoinHostPort(host, fmt.Sprint(hostPort))))
				if err == nil && body != "hello-kubebus\n" {
					return fmt.Errorf("body %q", body)
				}
				return err
			})
		}
	})
	t.Run("the pod network is in the node's namespace only", func(t *testing.T) {
		tr, err := e.node.Traces(e.bridge, e.podCIDR)
		if err != nil {
			t.Fatal(err)
		}
		if !tr.Link || !strings.Contains(strings.Join(tr.Addrs, " "), "10.244.77.1/24") ||
			!tr.HasRule(net.JoinHostPort(sb.IP, "8080")) || !tr.HasRule("-A CNI-FORWARD -d "+sb.IP+"/32") {
			t.Errorf("node namespace: %s; want the bridge, the gateway, the hostPort DNAT and the firewall rule", tr)
		}
		e.requireHostClean(t)
	})
	t.Run("status", func(t *testing.T) {
		c, err := rt.ContainerStatus(ctx, web)
		if err != nil {
			t.Fatal(err)
		}
		if c.State != runtime.ContainerRunning || c.Name != "httpd" || c.SandboxID != sb.ID || c.StartedAt.IsZero() ||
			c.Image != "busybox" || !strings.HasPrefix(c.ImageID, "sha256:") || c.LogPath != webLog {
			t.Errorf("status %+v", c)
		}
		for k, v := range map[string]string{runtime.LabelPodUID: "uid-1", runtime.LabelPodName: "web", runtime.LabelPodNamespace: "default",
			runtime.LabelContainer: "httpd", runtime.LabelAttempt: "0", runtime.LabelSandbox: sb.ID, "role": "server"} {
			if c.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
			}
		}
		eventually(t, 10*time.Second, "log file has the output", func() error {
			b, err := os.ReadFile(webLog)
			if err != nil || !strings.Contains(string(b), "starting") {
				return fmt.Errorf("log %q, %v", b, err)
			}
			return nil
		})
	})
	t.Run("exec", func(t *testing.T) {
		res, err := rt.ExecSync(ctx, web, []string{"sh", "-c", "echo out; echo err >&2; exit 7"}, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" || res.ExitCode != 7 {
			t.Errorf("exec: stdout %q stderr %q code %d", res.Stdout, res.Stderr, res.ExitCode)
		}
		res, err = rt.ExecSync(ctx, web, []string{"hostname"}, 10*time.Second)
		if err != nil || string(res.Stdout) != "web-host\n" || res.ExitCode != 0 {
			t.Errorf("hostname: %q %d %v", res.Stdout, res.ExitCode, err)
		}
		res, err = rt.ExecSync(ctx, web, []string{"cat", "/etc/hosts", "/etc/hostname"}, 10*time.Second)
		if err != nil || !strings.Contains(string(res.Stdout), sb.IP+"\tweb-host") || !strings.Contains(string(res.Stdout), "\nweb-host\n") {
			t.Errorf("/etc/hosts and /etc/hostname: %q %v", res.Stdout, err)
		}
		res, err = rt.ExecSync(ctx, web, []string{"sh", "-c", "echo $GREETING"}, 10*time.Second)
		if err != nil || string(res.Stdout) != "kubebus\n" {
			t.Errorf("environment in exec: %q %v", res.Stdout, err)
		}
		_, err = rt.ExecSync(ctx, web, []string{"sleep", "30"}, 300*time.Millisecond)
		if !errors.Is(err, ErrExecTimeout) {
			t.Errorf("exec past its timeout: %v", err)
		}
		if _, err := rt.ExecSync(ctx, web, []string{"/no/such/binary"}, 10*time.Second); err == nil {
			t.Error("exec of a missing binary: no error")
		}
		if _, err := rt.ExecSync(ctx, web, nil, time.Second); err == nil {
			t.Error("exec of no command: no error")
		}
	})
	t.Run("cgroup limits", func(t *testing.T) {
		want := map[string]string{
			"memory/" + e.cfg.Namespace + "/" + web + "/memory.limit_in_bytes": "67108864",
			"cpu/" + e.cfg.Namespace + "/" + web + "/cpu.cfs_quota_us":         "50000",
			"cpu/" + e.cfg.Namespace + "/" + web + "/cpu.cfs_period_us":        "100000",
			"cpu/" + e.cfg.Namespace + "/" + web + "/cpu.shares":               "512",
		}
		if isCgroup2() {
			want = map[string]string{
				e.cfg.Namespace + "/" + web + "/memory.max": "67108864",
				e.cfg.Namespace + "/" + web + "/cpu.max":    "50000 100000",
			}
		}
		for f, v := range want {
			b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", f))
			if err != nil {
				t.Errorf("reading the container's cgroup: %v", err)
				continue
			}
			if got := strings.TrimSpace(string(b)); got != v {
				t.Errorf("%s = %q, want %q", f, got, v)
			}
		}
	})

	t.Run("exit codes", func(t *testing.T) {
		failLog := filepath.Join(logDir, "fail", "0.log")
		fail := runContainer(t, rt, sb, runtime.ContainerConfig{Name: "fail", Command: []string{"sh", "-c", "echo bye; exit 3"}, LogPath: failLog})
		ok := runContainer(t, rt, sb, runtime.ContainerConfig{Name: "ok", Command: []string{"true"}})
		c := containerExit(t, rt, fail)
		if c.ExitCode != 3 || c.Reason != "Error" || c.FinishedAt.IsZero() || c.FinishedAt.Before(c.StartedAt) {
			t.Errorf("exit 3: %+v", c)
		}
		if b, err := os.ReadFile(failLog); err != nil || string(b) != "bye\n" {
			t.Errorf("log of the failed container: %q %v", b, err)
		}
		c = containerExit(t, rt, ok)
		if c.ExitCode != 0 || c.Reason != "Completed" {
			t.Errorf("exit 0: %+v", c)
		}
		if err := rt.StartContainer(ctx, ok); err == nil {
			t.Error("starting an exited container again: no error")
		}
		if _, err := rt.ExecSync(ctx, ok, []string{"true"}, time.Second); err == nil {
			t.Error("exec in an exited container: no error")
		}
	})

	t.Run("stop honours SIGTERM", func(t *testing.T) {
		termLog := filepath.Join(logDir, "term", "0.log")
		id := runContainer(t, rt, sb, runtime.ContainerConfig{
			Name:    "term",
			Command: []string{"sh", "-c", `trap 'echo got TERM; exit 0' TERM; echo ready; while true; do sleep 0.1; done`},
			LogPath: termLog,
		})
		eventually(t, 10*time.Second, "trap installed", func() error {
			if b, _ := os.ReadFile(termLog); !strings.Contains(string(b), "ready") {
				return errors.New("not ready")
			}
			return nil
		})
		if err := rt.StopContainer(ctx, id, 20*time.Second); err != nil {
			t.Fatal(err)
		}
		c, err := rt.ContainerStatus(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if c.State != runtime.ContainerExited || c.ExitCode != 0 || c.Reason != "Completed" {
			t.Errorf("after SIGTERM: %+v", c)
		}
		if b, _ := os.ReadFile(termLog); !strings.Contains(string(b), "got TERM") {
			t.Errorf("log %q: the trap did not run", b)
		}
		if err := rt.StopContainer(ctx, id, time.Second); err != nil {
			t.Errorf("stopping a stopped container: %v", err)
		}
	})
	t.Run("stop kills after the grace period", func(t *testing.T) {
		// sleep as PID 1 has no SIGTERM handler, so the kernel drops SIGTERM.
		id := runContainer(t, rt, sb, runtime.ContainerConfig{Name: "stubborn", Command: []string{"sleep", "1000"}})
		if err := rt.StopContainer(ctx, id, 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		c, err := rt.ContainerStatus(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if c.State != runtime.ContainerExited || c.ExitCode != 137 || c.Reason != "Error" {
			t.Errorf("after SIGKILL: %+v", c)
		}
	})
	t.Run("OOM kill", func(t *testing.T) {
		id := runContainer(t, rt, sb, runtime.ContainerConfig{
			Name:             "hog",
			Command:          []string{"sh", "-c", "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo survived"},
			MemoryLimitBytes: 16 << 20,
		})
		c := containerExit(t, rt, id)
		if c.Reason != "OOMKilled" || c.ExitCode != 137 {
			t.Errorf("memory hog: %+v", c)
		}
	})

	t.Run("a restarted kubelet finds everything", func(t *testing.T) {
		before, err := rt.ListContainers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rt2 := e.newRuntime(t)
		sbs, err := rt2.ListPodSandboxes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s := findSandbox(sbs, sb.ID); s == nil || s.State != runtime.SandboxReady || s.IP != sb.IP || s.Name != "web" ||
			s.NetNSPath != sb.NetNSPath || !s.CreatedAt.Equal(sb.CreatedAt) {
			t.Errorf("sandboxes after restart: %+v", sbs)
		}
		after, err := rt2.ListContainers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) {
			t.Fatalf("%d containers before, %d after", len(before), len(after))
		}
		for _, b := range before {
			a := findContainer(after, b.ID)
			if a == nil || a.State != b.State || a.ExitCode != b.ExitCode || a.Reason != b.Reason || !a.FinishedAt.Equal(b.FinishedAt) {
				t.Errorf("container %s: before %+v, after %+v", b.Name, b, a)
			}
		}
		if c := findContainer(after, web); c == nil || c.State != runtime.ContainerRunning {
			t.Errorf("httpd after restart: %+v", c)
		}
	})

	t.Run("containers survive a containerd restart", func(t *testing.T) {
		pid := e.sup.PID()
		if err := killPID(pid); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "containerd restarted", func() error {
			if e.sup.Restarts() < 1 || e.sup.PID() == 0 || e.sup.PID() == pid {
				return errors.New("not yet")
			}
			_, err := rt.Version(ctx)
			return err
		})
		c, err := rt.ContainerStatus(ctx, web)
		if err != nil || c.State != runtime.ContainerRunning {
			t.Errorf("httpd after containerd restart: %+v %v", c, err)
		}
		if body, err := e.httpGet(fmt.Sprintf("http://%s/index.html", net.JoinHostPort(sb.IP, "8080"))); err != nil || body != "hello-kubebus\n" {
			t.Errorf("GET after containerd restart: %q %v", body, err)
		}
		cs, err := rt.ListContainers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.Name == "fail" && (c.State != runtime.ContainerExited || c.ExitCode != 3) {
				t.Errorf("exited container after containerd restart: %+v", c)
			}
		}
	})

	t.Run("stop and remove the sandbox", func(t *testing.T) {
		if err := rt.StopPodSandbox(ctx, sb.ID); err != nil {
			t.Fatal(err)
		}
		s, err := rt.PodSandboxStatus(ctx, sb.ID)
		if err != nil || s.State != runtime.SandboxNotReady || s.IP != "" || s.NetNSPath != "" {
			t.Errorf("after stop: %+v %v", s, err)
		}
		c, err := rt.ContainerStatus(ctx, web)
		if err != nil || c.State != runtime.ContainerExited {
			t.Errorf("httpd after the sandbox stopped: %+v %v", c, err)
		}
		if _, err := os.Stat(filepath.Join(e.dir, "cni", "ipam", "kbtest", sb.IP)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("IP %s still allocated: %v", sb.IP, err)
		}
		if out, err := e.node.IP("-o", "link", "show", "master", e.bridge); err != nil || strings.Contains(out, "veth") {
			t.Errorf("veth left on the bridge: %s %v", out, err)
		}
		if _, err := os.Stat(sb.NetNSPath); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("network namespace %s left: %v", sb.NetNSPath, err)
		}
		if _, err := rt.CreateContainer(ctx, sb.ID, runtime.ContainerConfig{Name: "late", Image: "busybox"}); err == nil {
			t.Error("creating a container in a stopped sandbox: no error")
		}
		if err := rt.StopPodSandbox(ctx, sb.ID); err != nil {
			t.Errorf("second stop: %v", err)
		}
		if err := rt.RemovePodSandbox(ctx, sb.ID); err != nil {
			t.Fatal(err)
		}
		sbs, err := rt.ListPodSandboxes(ctx)
		if err != nil || len(sbs) != 0 {
			t.Errorf("sandboxes after remove: %+v %v", sbs, err)
		}
		cs, err := rt.ListContainers(ctx)
		if err != nil || len(cs) != 0 {
			t.Errorf("containers after remove: %+v %v", cs, err)
		}
		if err := rt.RemovePodSandbox(ctx, sb.ID); err != nil {
			t.Errorf("second remove: %v", err)
		}
		if _, err := os.Stat(webLog); err != nil {
			t.Errorf("the log should outlive the container: %v", err)
		}
	})
}

package containerd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubebus/kubebus/kubelet/cni"
	"github.com/kubebus/kubebus/kubelet/runtime"
)

func TestIntegrationHostNetwork(t *testing.T) {
	requireContainerd(t)
	e := startEnv(t, envOptions{podCIDR: "10.244.81.0/24"})
	ctx := context.Background()
	rt := e.rt
	e.importBusybox(t)

	sb, err := rt.RunPodSandbox(ctx, runtime.SandboxConfig{PodUID: "u-host", Name: "hostnet", Namespace: "kube-system", HostNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	// The pod joins the node's network namespace, with the node's IP.
	if sb.NetNSPath != e.node.Path || sb.IP != e.nodeIP || sb.State != runtime.SandboxReady {
		t.Errorf("host-network sandbox %+v, want namespace %s and IP %s", sb, e.node.Path, e.nodeIP)
	}
	port := 40000 + os.Getpid()%20000
	body := "host network of " + e.node.Name + "\n"
	id := runContainer(t, rt, sb, runtime.ContainerConfig{
		Name:    "httpd",
		Command: []string{"sh", "-c", fmt.Sprintf("echo '%s' > /tmp/index.html; exec httpd -f -p 127.0.0.1:%d -h /tmp", strings.TrimSpace(body), port)},
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/index.html", port)
	eventually(t, 20*time.Second, "GET 127.0.0.1 in the node's namespace", func() error {
		got, err := e.httpGet(url)
		if err == nil && got != body {
			err = fmt.Errorf("body %q", got)
		}
		return err
	})
	if got, _ := httpGetFrom("", url); got == body {
		t.Error("the host-network pod listens in the host's namespace, not the node's")
	}
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	res, err := rt.ExecSync(ctx, id, []string{"hostname"}, 10*time.Second)
	if err != nil || strings.TrimSpace(string(res.Stdout)) != hostname {
		t.Errorf("hostname in a host-network pod: %q %v, want %q", res.Stdout, err, hostname)
	}
	if err := rt.StopPodSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if c, err := rt.ContainerStatus(ctx, id); err != nil || c.State != runtime.ContainerExited {
		t.Errorf("container after its sandbox stopped: %+v %v", c, err)
	}
	if err := rt.RemovePodSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if !cni.IsNetNS(e.node.Path) {
		t.Errorf("removing a host-network sandbox removed the node's namespace %s", e.node.Path)
	}
}

func TestIntegrationContainerConfig(t *testing.T) {
	requireContainerd(t)
	e := startEnv(t, envOptions{podCIDR: "10.244.82.0/24"})
	ctx := context.Background()
	rt := e.rt
	e.importBusybox(t)
	sb, err := rt.RunPodSandbox(ctx, runtime.SandboxConfig{PodUID: "u-cfg", Name: "cfg", Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	rw := filepath.Join(e.dir, "vol-rw")
	ro := filepath.Join(e.dir, "vol-ro")
	for _, d := range []string{rw, ro} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ro, "data"), []byte("read me"), 0o644); err != nil {
		t.Fatal(err)
	}
	uid, gid := int64(1000), int64(2000)
	nobody := int64(65534)

	// exec runs cmd in a new container of the sandbox and returns what it
	// printed.
	exec := func(name string, cfg runtime.ContainerConfig) string {
		t.Helper()
		cfg.Name = name
		cfg.LogPath = filepath.Join(e.dir, "logs", name+".log")
		id := runContainer(t, rt, sb, cfg)
		c := containerExit(t, rt, id)
		b, _ := os.ReadFile(cfg.LogPath)
		if c.ExitCode != 0 {
			t.Errorf("%s exited %d: %s", name, c.ExitCode, b)
		}
		return string(b)
	}
	for name, tc := range map[string]struct {
		cfg  runtime.ContainerConfig
		want string
	}{
		"command and args": {cfg: runtime.ContainerConfig{Command: []string{"sh"}, Args: []string{"-c", "echo command and args"}}, want: "command and args\n"},
		"image default":    {cfg: runtime.ContainerConfig{}, want: ""}, // Cmd sh, no stdin
		"working dir":      {cfg: runtime.ContainerConfig{Command: []string{"pwd"}, WorkingDir: "/etc"}, want: "/etc\n"},
		"env overrides image env": {cfg: runtime.ContainerConfig{Command: []string{"sh", "-c", "echo $PATH $X"},
			Env: []runtime.KeyValue{{Key: "PATH", Value: "/bin"}, {Key: "X", Value: "a b"}}}, want: "/bin a b\n"},
		"user and group":       {cfg: runtime.ContainerConfig{Command: []string{"sh", "-c", "id -u; id -g"}, RunAsUser: &uid, RunAsGroup: &gid}, want: "1000\n2000\n"},
		"user from the passwd": {cfg: runtime.ContainerConfig{Command: []string{"sh", "-c", "id -u; id -g"}, RunAsUser: &nobody}, want: "65534\n65534\n"},
		"group only":           {cfg: runtime.ContainerConfig{Command: []string{"sh", "-c", "id -u; id -g"}, RunAsGroup: &gid}, want: "0\n2000\n"},
		"mounts": {cfg: runtime.ContainerConfig{
			Command: []string{"sh", "-c", "echo written > /rw/out; cat /ro/data; echo; sh -c 'echo x > /ro/data' 2>/dev/null || echo read-only"},
			Mounts:  []runtime.Mount{{HostPath: rw, ContainerPath: "/rw"}, {HostPath: ro, ContainerPath: "/ro", ReadOnly: true}},
		}, want: "read me\nread-only\n"},
		"own resolv.conf": {cfg: runtime.ContainerConfig{Command: []string{"cat", "/etc/resolv.conf"},
			Mounts: []runtime.Mount{{HostPath: filepath.Join(ro, "data"), ContainerPath: "/etc/resolv.conf", ReadOnly: true}}}, want: "read me"},
		"not privileged": {cfg: runtime.ContainerConfig{Command: []string{"sh", "-c", "ip link set lo mtu 1500 2>/dev/null && echo can || echo cannot"}}, want: "cannot\n"},
		"privileged":     {cfg: runtime.ContainerConfig{Command: []string{"sh", "-c", "ip link set lo mtu 1500 2>/dev/null && echo can || echo cannot"}, Privileged: true}, want: "can\n"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := exec(strings.ReplaceAll(name, " ", "-"), tc.cfg); got != tc.want {
				t.Errorf("output %q, want %q", got, tc.want)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(rw, "out")); err != nil || string(b) != "written\n" {
		t.Errorf("file written to the rw mount: %q %v", b, err)
	}

	for name, cfg := range map[string]runtime.ContainerConfig{
		"no name":        {Image: "busybox"},
		"no image":       {Name: "x"},
		"relative log":   {Name: "x", Image: "busybox", LogPath: "x.log"},
		"relative mount": {Name: "x", Image: "busybox", Mounts: []runtime.Mount{{HostPath: "a", ContainerPath: "/a"}}},
		"bad env":        {Name: "x", Image: "busybox", Env: []runtime.KeyValue{{Key: "A=B", Value: "c"}}},
		"bad user":       {Name: "x", Image: "busybox", RunAsUser: func() *int64 { v := int64(-1); return &v }()},
		"tiny quota":     {Name: "x", Image: "busybox", CPUQuota: 10},
	} {
		if _, err := rt.CreateContainer(ctx, sb.ID, cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := rt.CreateContainer(ctx, "nosuchsandbox", runtime.ContainerConfig{Name: "x", Image: "busybox"}); err == nil {
		t.Error("container in a missing sandbox: no error")
	}
	if _, err := rt.CreateContainer(ctx, "../../etc", runtime.ContainerConfig{Name: "x", Image: "busybox"}); err == nil {
		t.Error("container in a sandbox with a path for ID: no error")
	}

	// A command that does not exist fails the start; the container is
	// reported as an exit with StartError.
	id, err := rt.CreateContainer(ctx, sb.ID, runtime.ContainerConfig{Name: "broken", Image: "busybox", Command: []string{"/no/such/binary"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, id); err == nil {
		t.Fatal("starting a missing binary: no error")
	}
	if c, err := rt.ContainerStatus(ctx, id); err != nil || c.State != runtime.ContainerExited || c.ExitCode != 128 || c.Reason != ReasonStartError {
		t.Errorf("after a failed start: %+v %v", c, err)
	}

	// Missing objects.
	for name, err := range map[string]error{
		"start":  rt.StartContainer(ctx, "nosuchcontainer"),
		"status": func() error { _, err := rt.ContainerStatus(ctx, "nosuchcontainer"); return err }(),
	} {
		if !isNotFound(err) {
			t.Errorf("%s of a missing container: %v", name, err)
		}
	}
	for name, err := range map[string]error{
		"stop":           rt.StopContainer(ctx, "nosuchcontainer", time.Second),
		"remove":         rt.RemoveContainer(ctx, "nosuchcontainer"),
		"stop sandbox":   rt.StopPodSandbox(ctx, "nosuchsandbox"),
		"remove sandbox": rt.RemovePodSandbox(ctx, "nosuchsandbox"),
	} {
		if err != nil {
			t.Errorf("%s of a missing object: %v", name, err)
		}
	}
}

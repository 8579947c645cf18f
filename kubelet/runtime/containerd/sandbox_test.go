package containerd

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// execOut runs cmd in the container and returns its trimmed stdout.
func execOut(t *testing.T, rt *Runtime, id string, cmd ...string) string {
	t.Helper()
	res, err := rt.ExecSync(context.Background(), id, cmd, 10*time.Second)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec %q in %s: exit %d, %v; stderr %q", cmd, id, res.ExitCode, err, res.Stderr)
	}
	return strings.TrimSpace(string(res.Stdout))
}

func TestIntegrationPodNamespaces(t *testing.T) {
	requireContainerd(t)
	e := startEnv(t, envOptions{podCIDR: "10.244.78.0/24"})
	ctx := context.Background()
	rt := e.rt
	e.importBusybox(t)

	// Two containers of a pod; a runs a sleep b can look for.
	pod := func(t *testing.T, name string, share bool) (sb runtime.Sandbox, a, b string) {
		t.Helper()
		sb, err := rt.RunPodSandbox(ctx, runtime.SandboxConfig{PodUID: "uid-" + name, Name: name, Namespace: "default", Hostname: name + "-host", ShareProcessNamespace: share})
		if err != nil {
			t.Fatal(err)
		}
		a = runContainer(t, rt, sb, runtime.ContainerConfig{Name: "a", Command: []string{"sleep", "3217"}})
		b = runContainer(t, rt, sb, runtime.ContainerConfig{Name: "b", Command: []string{"sleep", "3600"}})
		return sb, a, b
	}
	ns := func(t *testing.T, id, typ string) string {
		t.Helper()
		return execOut(t, rt, id, "busybox", "readlink", "/proc/self/ns/"+typ)
	}

	t.Run("shared process namespace", func(t *testing.T) {
		sb, a, b := pod(t, "shared", true)
		if ps := execOut(t, rt, b, "ps", "-o", "pid,args"); !strings.Contains(ps, "sleep 3217") || !strings.Contains(ps, "/pause") {
			t.Errorf("ps in b does not list a's sleep and the pause process:\n%s", ps)
		}
		for _, typ := range []string{"pid", "ipc", "uts", "net"} {
			if na, nb := ns(t, a, typ), ns(t, b, typ); na != nb {
				t.Errorf("%s namespaces differ: a %s, b %s", typ, na, nb)
			}
		}
		// The pause process is PID 1 of the pod: it reaps the orphans that
		// exit (here a sleep whose parent exited at once).
		ps := execOut(t, rt, b, "sh", "-c", "(sleep 0.2 &); sleep 1; ps -o stat,ppid,args")
		if !strings.Contains(ps, "\n") || strings.Contains(ps, "\nZ") {
			t.Errorf("a zombie is left in the pod:\n%s", ps)
		}
		// POSIX shared memory goes with the IPC namespace: /dev/shm too.
		execOut(t, rt, a, "sh", "-c", "echo from-a > /dev/shm/seg")
		if got := execOut(t, rt, b, "cat", "/dev/shm/seg"); got != "from-a" {
			t.Errorf("b reads %q from a's /dev/shm", got)
		}
		if h := execOut(t, rt, b, "hostname"); h != "shared-host" {
			t.Errorf("hostname %q", h)
		}
		// The pause container belongs to the sandbox, not to the pod's
		// containers.
		cs, err := rt.ListContainers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.SandboxID == sb.ID && c.ID != a && c.ID != b {
				t.Errorf("unexpected container in the sandbox: %+v", c)
			}
		}
		// Stopping the sandbox kills the pause process; removing it removes
		// the pause container.
		if err := rt.StopPodSandbox(ctx, sb.ID); err != nil {
			t.Fatal(err)
		}
		s, err := rt.readSandbox(sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rt.pausePID(ctx, s); err == nil {
			t.Error("the pause process runs after StopPodSandbox")
		}
		if err := rt.RemovePodSandbox(ctx, sb.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.client.LoadContainer(rt.ns(ctx), pauseID(sb.ID)); !isNotFound(err) {
			t.Errorf("pause container after RemovePodSandbox: %v", err)
		}
		if _, err := os.Stat(rt.sandboxDir(sb.ID)); !os.IsNotExist(err) {
			t.Errorf("sandbox directory after RemovePodSandbox: %v", err)
		}
	})

	t.Run("host IPC and PID", func(t *testing.T) {
		sb, err := rt.RunPodSandbox(ctx, runtime.SandboxConfig{PodUID: "uid-host", Name: "host", Namespace: "default", HostNetwork: true, HostIPC: true, HostPID: true})
		if err != nil {
			t.Fatal(err)
		}
		c := runContainer(t, rt, sb, runtime.ContainerConfig{Name: "c", Command: []string{"sleep", "3600"}})
		for _, typ := range []string{"ipc", "pid"} {
			own, err := os.Readlink("/proc/self/ns/" + typ)
			if err != nil {
				t.Fatal(err)
			}
			if got := ns(t, c, typ); got != own {
				t.Errorf("%s namespace %s, want the host's %s", typ, got, own)
			}
		}
		if err := rt.RemovePodSandbox(ctx, sb.ID); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("own process namespaces", func(t *testing.T) {
		sb, a, b := pod(t, "private", false)
		if ps := execOut(t, rt, b, "ps", "-o", "pid,args"); strings.Contains(ps, "sleep 3217") || strings.Contains(ps, "/pause") {
			t.Errorf("ps in b lists another container's process:\n%s", ps)
		}
		if na, nb := ns(t, a, "pid"), ns(t, b, "pid"); na == nb {
			t.Errorf("a and b share the PID namespace %s", na)
		}
		for _, typ := range []string{"ipc", "uts", "net"} {
			if na, nb := ns(t, a, typ), ns(t, b, typ); na != nb {
				t.Errorf("%s namespaces differ: a %s, b %s", typ, na, nb)
			}
		}
		// A sandbox whose pause process died is not ready.
		s, err := rt.readSandbox(sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := rt.pausePID(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if err := killPID(int(pid)); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "the sandbox is NotReady once its pause process died", func() error {
			st, err := rt.PodSandboxStatus(ctx, sb.ID)
			if err != nil {
				return err
			}
			sbs, err := rt.ListPodSandboxes(ctx)
			if err != nil {
				return err
			}
			if l := findSandbox(sbs, sb.ID); st.State != runtime.SandboxNotReady || l == nil || l.State != runtime.SandboxNotReady {
				return fmt.Errorf("status %s, listed %+v", st.State, l)
			}
			return nil
		})
	})
}

package containerd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSupervisorConfig(t *testing.T) {
	t.Parallel()
	long := "/tmp/" + strings.Repeat("d", 100)
	for name, cfg := range map[string]SupervisorConfig{
		"no dir":       {},
		"relative dir": {Dir: "ctrd"},
		"long socket":  {Dir: long},
	} {
		if _, err := StartSupervisor(context.Background(), cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	_, err := StartSupervisor(context.Background(), SupervisorConfig{Dir: t.TempDir(), Binary: "/nonexistent/containerd"})
	if err == nil || !strings.Contains(err.Error(), "install the Debian package containerd") {
		t.Errorf("missing binary: %v", err)
	}
	// A "containerd" that exits at once: the error says so and shows its log.
	dir := t.TempDir()
	_, err = StartSupervisor(context.Background(), SupervisorConfig{Dir: dir, Binary: "false"})
	if err == nil || !strings.Contains(err.Error(), "exited while starting") {
		t.Errorf("binary that exits: %v", err)
	}
}

func TestConfigTOML(t *testing.T) {
	t.Parallel()
	got := ConfigTOML("/tmp/kb-x/ctrd", "debug")
	for _, want := range []string{
		"version = 2\n",
		`root = "/tmp/kb-x/ctrd/root"`,
		`state = "/tmp/kb-x/ctrd/state"`,
		`disabled_plugins = ["io.containerd.grpc.v1.cri"]`,
		"[grpc]\n  address = \"/tmp/kb-x/ctrd/containerd.sock\"",
		"[debug]\n  level = \"debug\"",
		`[plugins."io.containerd.internal.v1.opt"]` + "\n    path = \"/tmp/kb-x/ctrd/opt\"",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
}

func TestIntegrationSupervisor(t *testing.T) {
	requireContainerd(t)
	dir, err := os.MkdirTemp("/tmp", "kb-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sup, err := StartSupervisor(ctx, SupervisorConfig{Dir: filepath.Join(dir, "ctrd"), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		sup.Wait()
		for _, pid := range processesUnder(dir) {
			t.Errorf("process %d left under %s", pid, dir)
			killPID(pid)
		}
	})
	first := sup.PID()
	if first == 0 || sup.Address() != filepath.Join(dir, "ctrd", "containerd.sock") {
		t.Fatalf("pid %d, address %s", first, sup.Address())
	}
	rt, err := New(ctx, Config{Address: sup.Address(), Dir: filepath.Join(dir, "rt"), Namespace: testNamespace(dir)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if v, err := rt.Version(ctx); err != nil || v == "" {
		t.Fatalf("version %q, %v", v, err)
	}
	for _, d := range []string{"root", "state"} {
		if _, err := os.Stat(filepath.Join(dir, "ctrd", d)); err != nil {
			t.Errorf("containerd's %s is not under the supervisor's directory: %v", d, err)
		}
	}

	// Threads that end (as the network namespace code ends them) must not
	// take containerd with them through its parent-death signal.
	var wg sync.WaitGroup
	for i := 0; i < 400; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			goruntime.LockOSThread() // never unlocked: Go ends the thread
		}()
		if i%4 == 0 {
			wg.Wait()
		}
	}
	wg.Wait()
	if _, err := rt.Version(ctx); err != nil || sup.PID() != first || sup.Restarts() != 0 {
		t.Fatalf("containerd %d (restarts %d) after threads ended: %v", sup.PID(), sup.Restarts(), err)
	}

	// containerd dies: the supervisor starts another one.
	if err := killPID(first); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "containerd restarted", func() error {
		if sup.Restarts() != 1 || sup.PID() == 0 || sup.PID() == first {
			return errors.New("not restarted")
		}
		_, err := rt.Version(ctx)
		return err
	})
	if b, err := os.ReadFile(sup.LogPath()); err != nil || !strings.Contains(string(b), "containerd successfully booted") {
		t.Errorf("containerd's log %s: %v", sup.LogPath(), err)
	}

	// The context ends: containerd stops.
	second := sup.PID()
	cancel()
	sup.Wait()
	if sup.PID() != 0 {
		t.Errorf("PID %d after stop", sup.PID())
	}
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(second))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("containerd %d still exists after stop: %v", second, err)
	}
}

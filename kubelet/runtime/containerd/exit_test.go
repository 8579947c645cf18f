package containerd

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// TestIntegrationInstantExitsWhileListing: containers that exit as soon as
// they start are never reported with an exit other than their own, by
// listings that run (and reap) meanwhile, while the task is being made or
// while another listing reaps it.
func TestIntegrationInstantExitsWhileListing(t *testing.T) {
	requireContainerd(t)
	e := startEnv(t, envOptions{podCIDR: "10.244.79.0/24"})
	ctx := context.Background()
	rt := e.rt
	e.importBusybox(t)
	sb, err := rt.RunPodSandbox(ctx, runtime.SandboxConfig{PodUID: "uid-instant", Name: "instant", Namespace: "default", HostNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 12
	want := map[string]int32{} // container ID -> its exit code
	var mu sync.Mutex
	var bad []string
	check := func(where string, c runtime.Container) {
		mu.Lock()
		defer mu.Unlock()
		code, ok := want[c.ID]
		if ok && c.State == runtime.ContainerExited && c.ExitCode != code {
			bad = append(bad, fmt.Sprintf("%s: %s exited %d (%s), want %d", where, c.ID, c.ExitCode, c.Reason, code))
		}
	}
	lctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lctx.Err() == nil {
				cs, err := rt.ListContainers(lctx)
				if err != nil {
					continue
				}
				for _, c := range cs {
					check(fmt.Sprintf("lister %d", w), c)
					if w == 0 && c.State == runtime.ContainerExited {
						if one, err := rt.ContainerStatus(lctx, c.ID); err == nil {
							check("ContainerStatus", one)
						}
					}
				}
			}
		}()
	}
	for i := range n {
		script, code := "true", int32(0)
		if i%2 == 1 {
			script, code = "exit 1", 1
		}
		cfg := runtime.ContainerConfig{Name: fmt.Sprintf("c%d", i), Image: "busybox", Command: []string{"sh", "-c", script}}
		id, err := rt.CreateContainer(ctx, sb.ID, cfg)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		want[id] = code
		mu.Unlock()
		if err := rt.StartContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for id, code := range want {
		if c := containerExit(t, rt, id); c.ExitCode != code {
			t.Errorf("container %s exited %d (%s), want %d", id, c.ExitCode, c.Reason, code)
		}
	}
	stop()
	wg.Wait()
	for _, b := range bad {
		t.Error(b)
	}
}

// TestIntegrationReapOutlivesItsCaller: a reap whose caller's context is
// already canceled still records the exit and ends the shim, so that no
// shim is left that no later call can find (cleanup fails the test on one).
func TestIntegrationReapOutlivesItsCaller(t *testing.T) {
	requireContainerd(t)
	e := startEnv(t, envOptions{podCIDR: "10.244.80.0/24"})
	rt := e.rt
	e.importBusybox(t)
	ctx := rt.ns(context.Background())
	sb, err := rt.RunPodSandbox(ctx, runtime.SandboxConfig{PodUID: "uid-reap", Name: "reap", Namespace: "default", HostNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	before := processesUnder(e.dir)
	id := runContainer(t, rt, sb, runtime.ContainerConfig{Name: "c", Command: []string{"sh", "-c", "exit 3"}})
	c, err := rt.client.LoadContainer(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var st client.Status
	eventually(t, 30*time.Second, "the task stops", func() error {
		if st, err = task.Status(ctx); err != nil {
			return err
		}
		if st.Status != client.Stopped {
			return fmt.Errorf("status %s", st.Status)
		}
		return nil
	})
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := rt.reap(canceled, c, task, st); err != nil {
		t.Fatalf("reaping with a canceled context: %v", err)
	}
	if _, err := c.Task(ctx, nil); !errdefs.IsNotFound(err) {
		t.Errorf("the task is still there after the reap (err %v)", err)
	}
	if got := containerExit(t, rt, id); got.ExitCode != 3 {
		t.Errorf("container exited %d (%s), want 3", got.ExitCode, got.Reason)
	}
	eventually(t, 10*time.Second, "the shim ends", func() error {
		for _, pid := range processesUnder(e.dir) {
			if !slices.Contains(before, pid) {
				return fmt.Errorf("process %d, started with the container, still runs from %s", pid, e.dir)
			}
		}
		return nil
	})
}

package containerd

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	tasktypes "github.com/containerd/containerd/api/types/task"
	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// taskState is what containerd says about a container's task.
type taskState struct {
	exists     bool
	status     client.ProcessStatus
	exitStatus uint32
	exitedAt   time.Time
	// starting: there is no task yet because StartContainer is making it.
	starting bool
}

// unrecorded reports whether a container looks lost from two reads that
// are not atomic: its record says it started, yet it shows neither a task
// nor a recorded exit. That is also what a container looks like while
// StartContainer makes its task, or when a reap recorded its exit and
// deleted its task between the reads: recheck tells them apart.
func unrecorded(labels map[string]string, t taskState) bool {
	return !t.exists && !t.starting && labels[labelStartedAt] != "" && labels[labelExitCode] == ""
}

// containerStatus computes a container's status from its containerd record
// (labels included) and its task. It is pure.
func containerStatus(info containers.Container, t taskState, imageID string) runtime.Container {
	l := info.Labels
	attempt, _ := strconv.Atoi(l[runtime.LabelAttempt])
	c := runtime.Container{
		ID:        info.ID,
		SandboxID: l[runtime.LabelSandbox],
		Name:      l[runtime.LabelContainer],
		Attempt:   attempt,
		Image:     l[labelImageRef],
		ImageID:   imageID,
		CreatedAt: info.CreatedAt,
		StartedAt: parseTime(l[labelStartedAt]),
		LogPath:   l[labelLogPath],
		Labels:    userLabels(l),
	}
	if c.Image == "" {
		c.Image = info.Image
	}
	switch {
	case t.exists && t.status == client.Stopped:
		c.State = runtime.ContainerExited
		c.ExitCode = int32(t.exitStatus)
		c.FinishedAt = t.exitedAt
		c.Reason = l[labelReason] // recorded by an earlier reap, else below
		if c.Reason == "" {
			c.Reason = exitReason(c.ExitCode, false)
		}
	case t.exists && (t.status == client.Running || t.status == client.Paused || t.status == client.Pausing):
		c.State = runtime.ContainerRunning
	case t.exists && t.status == client.Created:
		c.State = runtime.ContainerCreated
	case t.exists:
		c.State = runtime.ContainerUnknown
	case l[labelExitCode] != "":
		code, _ := strconv.Atoi(l[labelExitCode])
		c.State = runtime.ContainerExited
		c.ExitCode = int32(code)
		c.FinishedAt = parseTime(l[labelFinishedAt])
		c.Reason = l[labelReason]
	case t.starting:
		// Its task is being made: not running yet.
		c.State = runtime.ContainerCreated
	case l[labelStartedAt] != "":
		// Started, but containerd lost the task without the exit being
		// recorded (e.g. the node rebooted): report an error exit so that the
		// restart policy applies.
		c.State = runtime.ContainerExited
		c.ExitCode = 255
		c.Reason = "Error"
	default:
		c.State = runtime.ContainerCreated
	}
	return c
}

// userLabels drops the runtime's own labels.
func userLabels(l map[string]string) map[string]string {
	out := maps.Clone(l)
	for _, k := range []string{labelLogPath, labelImageRef, labelStartedAt, labelFinishedAt, labelExitCode, labelReason} {
		delete(out, k)
	}
	return out
}

// ListContainers returns every container in the runtime's namespace,
// running or not, oldest first, except the sandboxes' pause containers. Stopped tasks it meets are reaped.
func (r *Runtime) ListContainers(ctx context.Context) ([]runtime.Container, error) {
	ctx = r.ns(ctx)
	infos, err := r.client.ContainerService().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("containerd: listing containers: %w", err)
	}
	tasks, err := r.taskStates(ctx)
	if err != nil {
		return nil, err
	}
	ids := r.imageIDs(ctx)
	out := make([]runtime.Container, 0, len(infos))
	for _, info := range infos {
		if isPause(info.Labels) {
			continue // part of its sandbox, not a container of the pod
		}
		t := tasks[info.ID]
		if unrecorded(info.Labels, t) {
			info, t = r.recheck(ctx, info, t)
		}
		if t.status == client.Stopped {
			// Record the exit and end the shim; report from the labels then.
			if i, ok := r.tryReap(ctx, info.ID); ok {
				info, t = i, taskState{}
			}
		}
		out = append(out, containerStatus(info, t, ids[info.Image]))
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// taskStates returns the state of every task in the runtime's namespace,
// by container ID.
func (r *Runtime) taskStates(ctx context.Context) (map[string]taskState, error) {
	resp, err := r.client.TaskService().List(r.ns(ctx), &tasksapi.ListTasksRequest{})
	if err != nil {
		return nil, fmt.Errorf("containerd: listing tasks: %w", err)
	}
	tasks := map[string]taskState{}
	for _, p := range resp.Tasks {
		tasks[p.ID] = taskState{exists: true, status: processStatus(p.Status), exitStatus: p.ExitStatus, exitedAt: p.ExitedAt.AsTime()}
	}
	return tasks, nil
}

// ContainerStatus returns one container. A stopped task is reaped.
func (r *Runtime) ContainerStatus(ctx context.Context, id string) (runtime.Container, error) {
	ctx = r.ns(ctx)
	c, err := r.loadContainer(ctx, id)
	if err != nil {
		return runtime.Container{}, err
	}
	info, err := c.Info(ctx)
	if err != nil {
		return runtime.Container{}, fmt.Errorf("containerd: container %s: %w", id, err)
	}
	var t taskState
	task, err := c.Task(ctx, nil)
	switch {
	case err == nil:
		st, err := task.Status(ctx)
		if err != nil {
			return runtime.Container{}, fmt.Errorf("containerd: container %s: task status: %w", id, err)
		}
		t = taskState{exists: true, status: st.Status, exitStatus: st.ExitStatus, exitedAt: st.ExitTime}
		if st.Status == client.Stopped {
			if i, ok := r.tryReap(ctx, id); ok {
				info, t = i, taskState{}
			}
		}
	case !errdefs.IsNotFound(err):
		return runtime.Container{}, fmt.Errorf("containerd: container %s: %w", id, err)
	}
	if unrecorded(info.Labels, t) {
		info, t = r.recheck(ctx, info, t)
	}
	imageID := ""
	if img, err := c.Image(ctx); err == nil {
		imageID = r.imageID(ctx, img.Target())
	}
	return containerStatus(info, t, imageID), nil
}

// recheck settles a container that unrecorded calls lost. One that
// StartContainer is starting is reported as such. Else its task, then its
// record, are read again: the start, if any, is over, so the task was made
// before; a reap records the exit before it deletes the task, so a task
// gone by the first read has its exit in the record read second. What is
// still unrecorded then was lost indeed (e.g. the node rebooted).
func (r *Runtime) recheck(ctx context.Context, info containers.Container, t taskState) (containers.Container, taskState) {
	if _, ok := r.starting.Load(info.ID); ok {
		t.starting = true
		return info, t
	}
	c, err := r.client.LoadContainer(ctx, info.ID)
	if err != nil {
		return info, t
	}
	if task, err := c.Task(ctx, nil); err == nil {
		if st, err := task.Status(ctx); err == nil {
			t = taskState{exists: true, status: st.Status, exitStatus: st.ExitStatus, exitedAt: st.ExitTime}
		}
	}
	if i, err := c.Info(ctx); err == nil {
		info = i
	}
	return info, t
}

// tryReap reaps a container's stopped task unless another call holds the
// container (e.g. StopContainer waiting out a grace period), and returns
// the container's record afterwards.
func (r *Runtime) tryReap(ctx context.Context, id string) (containers.Container, bool) {
	unlock, ok := r.locks.tryLock(id)
	if !ok {
		return containers.Container{}, false
	}
	defer unlock()
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return containers.Container{}, false
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return containers.Container{}, false
	}
	st, err := task.Status(ctx)
	if err != nil || st.Status != client.Stopped {
		return containers.Container{}, false
	}
	if err := r.reap(ctx, c, task, st); err != nil {
		r.cfg.Logger.Warn("reaping a stopped container", "container", id, "err", err)
		return containers.Container{}, false
	}
	info, err := c.Info(ctx)
	if err != nil {
		return containers.Container{}, false
	}
	return info, true
}

func processStatus(s tasktypes.Status) client.ProcessStatus {
	switch s {
	case tasktypes.Status_CREATED:
		return client.Created
	case tasktypes.Status_RUNNING:
		return client.Running
	case tasktypes.Status_STOPPED:
		return client.Stopped
	case tasktypes.Status_PAUSED:
		return client.Paused
	case tasktypes.Status_PAUSING:
		return client.Pausing
	default:
		return client.Unknown
	}
}

// cgroupOOMKilled reports whether the kernel's OOM killer killed a process
// in the container's cgroup (cgroupfs path, as in the OCI spec). It reads
// memory.events (cgroup v2) or memory.oom_control (v1); the cgroup exists
// until the task is deleted.
func cgroupOOMKilled(cgroupsPath string) bool {
	if cgroupsPath == "" || strings.Contains(cgroupsPath, ":") { // a systemd slice
		return false
	}
	var file string
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		file = filepath.Join("/sys/fs/cgroup", cgroupsPath, "memory.events")
	} else {
		file = filepath.Join("/sys/fs/cgroup/memory", cgroupsPath, "memory.oom_control")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	return oomKillCount(b) > 0
}

// oomKillCount reads the "oom_kill N" line of memory.events or
// memory.oom_control.
func oomKillCount(b []byte) int {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "oom_kill" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

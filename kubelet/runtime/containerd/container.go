package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/containerd/containerd/api/types/runc/options"
	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// Labels the runtime keeps on containers for itself.
const (
	labelLogPath    = "io.kubebus.container.log-path"
	labelImageRef   = "io.kubebus.container.image"
	labelStartedAt  = "io.kubebus.container.started-at"
	labelFinishedAt = "io.kubebus.container.finished-at"
	labelExitCode   = "io.kubebus.container.exit-code"
	labelReason     = "io.kubebus.container.reason"
)

// reapTimeout bounds a reap, which does not end with its caller's context.
const reapTimeout = 10 * time.Second

// Exit reasons beyond runtime.Container's Completed, Error and OOMKilled.
const (
	// ReasonStartError: the container could not be started (exit code 128).
	ReasonStartError = "StartError"
)

// CreateContainer creates a container in a ready sandbox from an image the
// runtime holds. It does not start it.
func (r *Runtime) CreateContainer(ctx context.Context, sandboxID string, cfg runtime.ContainerConfig) (string, error) {
	ctx = r.ns(ctx)
	if err := validateContainerConfig(&cfg); err != nil {
		return "", err
	}
	// Hold the sandbox so that it is not stopped or removed meanwhile.
	unlock := r.locks.lock(sandboxID)
	defer unlock()
	s, err := r.readSandbox(sandboxID)
	if err != nil {
		return "", err
	}
	if s.State != runtime.SandboxReady {
		return "", fmt.Errorf("containerd: creating container %q: sandbox %s is not ready", cfg.Name, sandboxID)
	}
	var pausePID uint32
	if s.PauseContainer != "" {
		if pausePID, err = r.pausePID(ctx, s); err != nil {
			return "", fmt.Errorf("containerd: creating container %q: sandbox %s is not ready: %w", cfg.Name, sandboxID, err)
		}
	}
	image, err := r.getImage(ctx, cfg.Image)
	if err != nil {
		return "", fmt.Errorf("containerd: creating container %q: %w", cfg.Name, err)
	}
	if err := r.ensureUnpacked(ctx, image); err != nil {
		return "", fmt.Errorf("containerd: creating container %q: %w", cfg.Name, err)
	}
	id := newID()
	labels := map[string]string{}
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	for k, v := range map[string]string{
		runtime.LabelPodUID:       s.PodUID,
		runtime.LabelPodName:      s.Name,
		runtime.LabelPodNamespace: s.Namespace,
		runtime.LabelContainer:    cfg.Name,
		runtime.LabelAttempt:      strconv.Itoa(cfg.Attempt),
		runtime.LabelSandbox:      s.ID,
		labelImageRef:             cfg.Image,
		labelLogPath:              cfg.LogPath,
	} {
		labels[k] = v
	}
	if cfg.Stdin {
		labels[labelStdin] = "true"
	}
	if cfg.TTY {
		labels[labelTTY] = "true"
	}
	var runtimeOpts any
	if r.cfg.RuncRoot != "" {
		runtimeOpts = &options.Options{Root: r.cfg.RuncRoot}
	}
	specOpts := append(imageSpecOpts(image, &cfg), containerSpecOpts(&cfg, s, r.sandboxDir(s.ID), pausePID)...)
	if cfg.TTY {
		specOpts = append(specOpts, oci.WithTTY)
	}
	_, err = r.client.NewContainer(ctx, id,
		client.WithImage(image),
		client.WithSnapshotter(r.cfg.Snapshotter),
		client.WithNewSnapshot(id, image),
		client.WithRuntime(RuncShim, runtimeOpts),
		client.WithNewSpec(specOpts...),
		client.WithContainerLabels(labels),
	)
	if err != nil {
		// A failed create may leave the snapshot behind.
		_ = r.client.SnapshotService(r.cfg.Snapshotter).Remove(ctx, id)
		return "", fmt.Errorf("containerd: creating container %q: %w", cfg.Name, err)
	}
	r.cfg.Logger.Debug("container created", "container", id, "name", cfg.Name, "sandbox", s.ID)
	return id, nil
}

// StartContainer starts a created container. A container starts once: the
// kubelet creates a new one for each restart. When the start fails the
// container is reported Exited with exit code 128 and reason StartError.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	ctx = r.ns(ctx)
	unlock := r.locks.lock(id)
	defer unlock()
	c, err := r.loadContainer(ctx, id)
	if err != nil {
		return err
	}
	labels, err := c.Labels(ctx)
	if err != nil {
		return fmt.Errorf("containerd: starting container %s: %w", id, err)
	}
	if labels[labelStartedAt] != "" {
		return fmt.Errorf("containerd: container %s was already started", id)
	}
	logPath := labels[labelLogPath]
	ioc := cio.NullIO
	if logPath != "" {
		if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
			return fmt.Errorf("containerd: starting container %s: creating the log directory: %w", id, err)
		}
		ioc = cio.LogFile(logPath)
	}
	if stdin, tty := labels[labelStdin] == "true", labels[labelTTY] == "true"; stdin || tty {
		stdinPath := ""
		if stdin {
			stdinPath = r.cfg.stdinPath(id)
		}
		ioc = stdioCreator(stdinPath, logPath, tty)
	}
	// Until the task exists the container is started by its record but
	// shows no task: listings report it as starting, not as lost.
	r.starting.Store(id, struct{}{})
	defer r.starting.Delete(id)
	if _, err := c.SetLabels(ctx, map[string]string{labelStartedAt: formatTime(time.Now())}); err != nil {
		return fmt.Errorf("containerd: starting container %s: %w", id, err)
	}
	task, err := c.NewTask(ctx, ioc)
	if err == nil {
		if err = task.Start(ctx); err != nil {
			_, _ = task.Delete(context.WithoutCancel(ctx), client.WithProcessKill)
		}
	}
	if err != nil {
		now := formatTime(time.Now())
		_, _ = c.SetLabels(context.WithoutCancel(ctx), map[string]string{
			labelStartedAt: now, labelFinishedAt: now, labelExitCode: "128", labelReason: ReasonStartError,
		})
		return fmt.Errorf("containerd: starting container %s: %w", id, err)
	}
	r.cfg.Logger.Debug("container started", "container", id, "pid", task.Pid())
	return nil
}

// StopContainer sends SIGTERM to the container's main process, waits up to
// grace for it to exit, then kills every process of the container with
// SIGKILL. Stopping a stopped, never started or missing container does
// nothing.
func (r *Runtime) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	ctx = r.ns(ctx)
	unlock := r.locks.lock(id)
	defer unlock()
	c, err := r.loadContainer(ctx, id)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("containerd: stopping container %s: %w", id, err)
	}
	st, err := task.Status(ctx)
	if err != nil {
		return fmt.Errorf("containerd: stopping container %s: %w", id, err)
	}
	if st.Status != client.Stopped {
		exited, err := task.Wait(ctx)
		if err != nil {
			return fmt.Errorf("containerd: stopping container %s: %w", id, err)
		}
		stopped := false
		if grace > 0 {
			if err := task.Kill(ctx, syscall.SIGTERM); err != nil && !errdefs.IsNotFound(err) {
				return fmt.Errorf("containerd: stopping container %s: SIGTERM: %w", id, err)
			}
			timer := time.NewTimer(grace)
			select {
			case <-exited:
				stopped = true
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				return fmt.Errorf("containerd: stopping container %s: %w", id, ctx.Err())
			}
			timer.Stop()
		}
		if !stopped {
			if err := task.Kill(ctx, syscall.SIGKILL, client.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
				return fmt.Errorf("containerd: stopping container %s: SIGKILL: %w", id, err)
			}
			select {
			case <-exited:
			case <-ctx.Done():
				return fmt.Errorf("containerd: stopping container %s: waiting for its exit: %w", id, ctx.Err())
			}
		}
		if st, err = task.Status(ctx); err != nil {
			return fmt.Errorf("containerd: stopping container %s: %w", id, err)
		}
	}
	return r.reap(ctx, c, task, st)
}

// RemoveContainer kills the container if it runs and removes it with its
// filesystem. Its log file stays. Removing a missing container does nothing.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	ctx = r.ns(ctx)
	unlock := r.locks.lock(id)
	defer unlock()
	c, err := r.loadContainer(ctx, id)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if task, err := c.Task(ctx, nil); err == nil {
		if _, err := task.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("containerd: removing container %s: deleting its task: %w", id, err)
		}
	} else if !errdefs.IsNotFound(err) {
		return fmt.Errorf("containerd: removing container %s: %w", id, err)
	}
	if err := c.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("containerd: removing container %s: %w", id, err)
	}
	if err := os.Remove(r.cfg.stdinPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.cfg.Logger.Warn("removing the stdin FIFO", "container", id, "err", err)
	}
	r.cfg.Logger.Debug("container removed", "container", id)
	return nil
}

// reap records the exit of a stopped task as labels on its container and
// deletes the task, which ends its shim. Reaping twice is harmless.
//
// A reap runs to its end even when its caller gives up (a listing whose
// context is canceled): containerd drops a task from its records before it
// tells the shim to shut down, so a delete cut short there leaves a shim
// running that no later call can find.
func (r *Runtime) reap(ctx context.Context, c client.Container, task client.Task, st client.Status) error {
	if st.Status != client.Stopped {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reapTimeout)
	defer cancel()
	oom := false
	if spec, err := c.Spec(ctx); err == nil && spec.Linux != nil {
		oom = cgroupOOMKilled(spec.Linux.CgroupsPath)
	}
	code := int32(st.ExitStatus)
	finished := st.ExitTime
	if finished.IsZero() || finished.Unix() <= 0 {
		finished = time.Now()
	}
	if _, err := c.SetLabels(ctx, map[string]string{
		labelExitCode:   strconv.Itoa(int(code)),
		labelFinishedAt: formatTime(finished),
		labelReason:     exitReason(code, oom),
	}); err != nil {
		return fmt.Errorf("containerd: recording the exit of container %s: %w", c.ID(), err)
	}
	if _, err := task.Delete(ctx); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("containerd: deleting the stopped task of container %s: %w", c.ID(), err)
	}
	return nil
}

// exitReason is the reason Kubernetes gives a terminated container.
func exitReason(code int32, oomKilled bool) string {
	switch {
	case oomKilled:
		return "OOMKilled"
	case code == 0:
		return "Completed"
	default:
		return "Error"
	}
}

func (r *Runtime) loadContainer(ctx context.Context, id string) (client.Container, error) {
	if !validID(id) {
		return nil, fmt.Errorf("containerd: invalid container ID %q", id)
	}
	c, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil, notFound("container", id)
	}
	if err != nil {
		return nil, fmt.Errorf("containerd: loading container %s: %w", id, err)
	}
	return c, nil
}

// sandboxContainers returns the IDs of the sandbox's containers.
func (r *Runtime) sandboxContainers(ctx context.Context, sandboxID string) ([]string, error) {
	cs, err := r.client.ContainerService().List(r.ns(ctx), fmt.Sprintf("labels.%q==%q", runtime.LabelSandbox, sandboxID))
	if err != nil {
		return nil, fmt.Errorf("containerd: listing the containers of sandbox %s: %w", sandboxID, err)
	}
	ids := make([]string, 0, len(cs))
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids, nil
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

var errStopped = errors.New("container is not running")

package containerd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

const (
	// maxExecOutput bounds what ExecSync keeps of each stream.
	maxExecOutput = 16 << 20
	// ioDrainTimeout bounds the wait for an exec's output after its exit.
	ioDrainTimeout = 2 * time.Second
)

// ErrExecTimeout is returned (wrapped) when an ExecSync command outlives its
// timeout; the command is killed.
var ErrExecTimeout = errors.New("exec timed out")

// ExecSync runs cmd in a running container (with the container's
// environment, working directory and user), waits for it and returns its
// output and exit code. A timeout of 0 waits for as long as ctx allows; on
// timeout the command is killed and the error wraps ErrExecTimeout.
func (r *Runtime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (runtime.ExecResult, error) {
	ctx = r.ns(ctx)
	if len(cmd) == 0 {
		return runtime.ExecResult{}, errors.New("containerd: exec: no command")
	}
	c, err := r.loadContainer(ctx, id)
	if err != nil {
		return runtime.ExecResult{}, err
	}
	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return runtime.ExecResult{}, fmt.Errorf("containerd: exec in container %s: %w", id, errStopped)
	}
	if err != nil {
		return runtime.ExecResult{}, fmt.Errorf("containerd: exec in container %s: %w", id, err)
	}
	if st, err := task.Status(ctx); err != nil {
		return runtime.ExecResult{}, fmt.Errorf("containerd: exec in container %s: %w", id, err)
	} else if st.Status != client.Running {
		return runtime.ExecResult{}, fmt.Errorf("containerd: exec in container %s: %w (%s)", id, errStopped, st.Status)
	}
	spec, err := c.Spec(ctx)
	if err != nil {
		return runtime.ExecResult{}, fmt.Errorf("containerd: exec in container %s: reading its spec: %w", id, err)
	}
	pspec := *spec.Process
	pspec.Args = cmd
	pspec.Terminal = false

	var stdout, stderr cappedBuffer
	creator := cio.NewCreator(cio.WithStreams(nil, &stdout, &stderr), cio.WithFIFODir(r.cfg.fifoDir()))
	proc, err := task.Exec(ctx, "exec-"+newID()[:24], &pspec, creator)
	if err != nil {
		return runtime.ExecResult{}, fmt.Errorf("containerd: exec in container %s: %w", id, err)
	}
	defer proc.Delete(context.WithoutCancel(ctx), client.WithProcessKill)
	exited, err := proc.Wait(ctx)
	if err != nil {
		return runtime.ExecResult{}, fmt.Errorf("containerd: exec in container %s: %w", id, err)
	}
	if err := proc.Start(ctx); err != nil {
		return runtime.ExecResult{}, fmt.Errorf("containerd: exec in container %s: starting %q: %w", id, cmd[0], err)
	}
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	var stopErr error
	var status client.ExitStatus
	select {
	case status = <-exited:
	case <-timer:
		stopErr = fmt.Errorf("containerd: exec in container %s: %q: %w after %s", id, cmd[0], ErrExecTimeout, timeout)
	case <-ctx.Done():
		stopErr = fmt.Errorf("containerd: exec in container %s: %q: %w", id, cmd[0], ctx.Err())
	}
	if stopErr != nil {
		kctx := context.WithoutCancel(ctx)
		_ = proc.Kill(kctx, syscall.SIGKILL)
		<-exited
	}
	// The streams end when the last writer is gone; a background process
	// of the command may hold them open, so wait a bounded time.
	drained := make(chan struct{})
	go func() { proc.IO().Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(ioDrainTimeout):
		proc.IO().Cancel()
		<-drained
	}
	res := runtime.ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	if stopErr != nil {
		return res, stopErr
	}
	code, _, err := status.Result()
	if err != nil {
		return res, fmt.Errorf("containerd: exec in container %s: %w", id, err)
	}
	res.ExitCode = int32(code)
	return res, nil
}

// cappedBuffer keeps the first maxExecOutput bytes written to it.
type cappedBuffer struct{ bytes.Buffer }

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := maxExecOutput - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

package containerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"

	"github.com/kubebus/kubebus/kubelet/cni"
	"github.com/kubebus/kubebus/kubelet/runtime"
)

// streamIdleDrain is how long, after an exec'd command exits, its output
// may stay silent before the streams are cut: a background process of the
// command may hold them open forever.
const streamIdleDrain = 2 * time.Second

// attachPoll is how often an attach checks the container's log for output.
const attachPoll = 100 * time.Millisecond

// Exec runs cmd in the running container id with the container's
// environment, working directory and user, streaming stdin (nil: none),
// stdout and stderr (nil: none; with tty, stderr is merged into the
// terminal and must be nil), as kubectl exec does. With tty the command
// gets a terminal, resized from resize. It returns the command's exit code
// once it exits and its output is copied; when ctx ends first the command
// is killed and the error is ctx's.
func (r *Runtime) Exec(ctx context.Context, id string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) (int, error) {
	ctx = r.ns(ctx)
	if len(cmd) == 0 {
		return 0, errors.New("containerd: exec: no command")
	}
	c, task, err := r.runningTask(ctx, id)
	if err != nil {
		return 0, err
	}
	spec, err := c.Spec(ctx)
	if err != nil {
		return 0, fmt.Errorf("containerd: exec in container %s: reading its spec: %w", id, err)
	}
	pspec := *spec.Process
	pspec.Args = cmd
	pspec.Terminal = tty

	progress := newOutputProgress()
	var in *eofReader
	// The shim needs both output pipes of a process without a terminal:
	// a stream the client did not ask for is discarded.
	outs := [2]io.Writer{io.Discard, io.Discard}
	for i, w := range []io.WriteCloser{stdout, stderr} {
		if w != nil {
			outs[i] = &progressWriter{w: w, p: progress}
		}
	}
	opts := []cio.Opt{cio.WithFIFODir(r.cfg.fifoDir())}
	var stdinR io.Reader
	if stdin != nil {
		in = &eofReader{r: stdin, eof: make(chan struct{})}
		stdinR = in
	}
	if tty {
		opts = append(opts, cio.WithStreams(stdinR, outs[0], nil), cio.WithTerminal)
	} else {
		opts = append(opts, cio.WithStreams(stdinR, outs[0], outs[1]))
	}
	proc, err := task.Exec(ctx, "exec-"+newID()[:24], &pspec, cio.NewCreator(opts...))
	if err != nil {
		return 0, fmt.Errorf("containerd: exec in container %s: %w", id, err)
	}
	kctx := context.WithoutCancel(ctx)
	defer func() { _, _ = proc.Delete(kctx, client.WithProcessKill) }()
	exited, err := proc.Wait(ctx)
	if err != nil {
		return 0, fmt.Errorf("containerd: exec in container %s: %w", id, err)
	}
	if err := proc.Start(ctx); err != nil {
		return 0, fmt.Errorf("containerd: exec in container %s: starting %q: %w", id, cmd[0], err)
	}
	if in != nil {
		// The command sees the end of its input only when the shim closes
		// it, which it does when asked, as ctr and the CRI plugin do.
		sctx, stop := context.WithCancel(ctx)
		defer stop()
		go func() {
			select {
			case <-in.eof:
				_ = proc.CloseIO(kctx, client.WithStdinCloser)
			case <-sctx.Done():
			}
		}()
	}
	if tty && resize != nil {
		rctx, stop := context.WithCancel(ctx)
		defer stop()
		go forwardResizes(rctx, resize, proc)
	}
	var status client.ExitStatus
	var stopErr error
	select {
	case status = <-exited:
	case <-ctx.Done():
		stopErr = fmt.Errorf("containerd: exec in container %s: %q: %w", id, cmd[0], ctx.Err())
		_ = proc.Kill(kctx, syscall.SIGKILL)
		<-exited
	}
	drainOutput(proc.IO(), progress)
	if stopErr != nil {
		return 0, stopErr
	}
	code, _, err := status.Result()
	if err != nil {
		return 0, fmt.Errorf("containerd: exec in container %s: %w", id, err)
	}
	return int(code), nil
}

// drainOutput waits for the copy of an exited process's output to end,
// and cuts it once no output came for streamIdleDrain. A write the client
// is slow to take is progress, however long it blocks.
func drainOutput(pio cio.IO, progress *outputProgress) {
	drained := make(chan struct{})
	go func() { pio.Wait(); close(drained) }()
	tick := time.NewTicker(streamIdleDrain / 4)
	defer tick.Stop()
	for {
		select {
		case <-drained:
			return
		case <-tick.C:
			if progress.idle() > streamIdleDrain {
				pio.Cancel()
				<-drained
				return
			}
		}
	}
}

// runningTask loads container id and its task, which must be running.
func (r *Runtime) runningTask(ctx context.Context, id string) (client.Container, client.Task, error) {
	c, err := r.loadContainer(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return nil, nil, fmt.Errorf("containerd: container %s: %w", id, errStopped)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("containerd: container %s: %w", id, err)
	}
	st, err := task.Status(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("containerd: container %s: %w", id, err)
	}
	if st.Status != client.Running {
		return nil, nil, fmt.Errorf("containerd: container %s: %w (%s)", id, errStopped, st.Status)
	}
	return c, task, nil
}

// IsNotRunning reports whether err says the container is not running.
func IsNotRunning(err error) bool { return errors.Is(err, errStopped) }

// attachQuiet is how long an attach whose input ended keeps copying
// output, once the output is quiet: the answer to the last input may still
// be on its way to the log.
const attachQuiet = 500 * time.Millisecond

// Attach attaches to the running container id as kubectl attach does. It
// streams what the container writes (its stdout and stderr, merged as its
// log file holds them; with a terminal, the terminal's output) to out from
// now on, until the container stops or ctx ends. stdin (nil: none) goes to
// the container's stdin when it was created with Stdin, and is dropped
// otherwise, as containerd's CRI plugin does. When stdin ends, the
// container's stdin is closed if stdinOnce and it has no terminal (and the
// output streams on until the container stops), else the attach ends. resize (nil: none)
// resizes a container's terminal.
func (r *Runtime) Attach(ctx context.Context, id string, stdin io.Reader, out io.Writer, resize <-chan remotecommand.TerminalSize, stdinOnce bool) error {
	st, err := r.ContainerStatus(ctx, id)
	if err != nil {
		return err
	}
	if st.State != runtime.ContainerRunning {
		return fmt.Errorf("containerd: attach to container %s: %w (%s)", id, errStopped, st.State)
	}
	if st.LogPath == "" {
		return fmt.Errorf("containerd: attach to container %s: it has no output to attach to", id)
	}
	nctx := r.ns(ctx)
	c, task, err := r.runningTask(nctx, id)
	if err != nil {
		return err
	}
	labels, err := c.Labels(nctx)
	if err != nil {
		return fmt.Errorf("containerd: attach to container %s: %w", id, err)
	}
	// The output is followed from before the first input is forwarded: an
	// answer written to the log before the log was opened would be lost.
	logf, off, err := openAtEnd(st.LogPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	kctx := context.WithoutCancel(nctx)
	tty := labels[labelTTY] == "true"
	var inputEnded chan struct{}
	if stdin != nil {
		var f *os.File
		if labels[labelStdin] == "true" {
			if f, err = openStdin(r.cfg.stdinPath(id)); err != nil {
				// Its stdin was closed (stdinOnce): nothing reads it.
				r.cfg.Logger.Debug("attach: the container's stdin is closed", "container", id, "err", err)
			}
		}
		if f == nil {
			go func() { _, _ = io.Copy(io.Discard, stdin) }()
		} else {
			inputEnded = make(chan struct{})
			go func() {
				_, _ = io.Copy(f, stdin)
				_ = f.Close()
				if stdinOnce && !tty {
					// The shim holds the FIFO open too: the process sees
					// the end of its input once the shim lets go. With a
					// terminal, that would end its output too: like
					// containerd's CRI plugin, the attach ends instead.
					if err := task.CloseIO(kctx, client.WithStdinCloser); err != nil && !errdefs.IsNotFound(err) {
						r.cfg.Logger.Warn("attach: closing the container's stdin", "container", id, "err", err)
					}
					return
				}
				close(inputEnded)
			}()
		}
	}
	if resize != nil && tty {
		rctx, stop := context.WithCancel(nctx)
		defer stop()
		go forwardResizes(rctx, resize, task)
	}
	running := func() bool {
		s, err := r.ContainerStatus(context.WithoutCancel(ctx), id)
		return err == nil && s.State == runtime.ContainerRunning
	}
	return followFrom(ctx, logf, off, out, running, inputEnded, attachPoll)
}

// openAtEnd opens the log at path for following from its current end.
func openAtEnd(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("containerd: attach: %w", err)
	}
	off, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("containerd: attach: %w", err)
	}
	return f, off, nil
}

// followFrom copies what is appended to f from offset off to out, polling every poll, until running reports false (after a
// last read) or ctx ends, or ended is closed (nil: never) and no output
// came for attachQuiet since.
func followFrom(ctx context.Context, f *os.File, off int64, out io.Writer, running func() bool, ended <-chan struct{}, poll time.Duration) error {
	buf := make([]byte, 32<<10)
	last := false
	var quietSince time.Time
	for {
		n, err := f.ReadAt(buf, off)
		if n > 0 {
			if _, werr := out.Write(buf[:n]); werr != nil {
				return nil // the client went away
			}
			off += int64(n)
			quietSince = time.Time{}
			continue
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("containerd: attach: reading %s: %w", f.Name(), err)
		}
		if last {
			return nil
		}
		if !running() {
			last = true
			continue
		}
		select {
		case <-ended:
			if quietSince.IsZero() {
				quietSince = time.Now()
			} else if time.Since(quietSince) >= attachQuiet {
				return nil
			}
		default:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
	}
}

// PortForward connects stream to TCP port on the loopback address of the
// network namespace at netnsPath ("" for the kubelet's own), as kubectl
// port-forward asks, and copies both ways until either side ends or ctx
// does. stream is closed on return.
func (r *Runtime) PortForward(ctx context.Context, netnsPath string, port int32, stream io.ReadWriteCloser) error {
	return PortForward(ctx, netnsPath, port, stream)
}

// PortForward is Runtime.PortForward, which needs no containerd.
func PortForward(ctx context.Context, netnsPath string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	if port <= 0 || port > 65535 {
		return fmt.Errorf("port-forward: invalid port %d", port)
	}
	conn, err := cni.Dialer(netnsPath)(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
	if err != nil {
		return fmt.Errorf("port-forward to port %d: %w", port, err)
	}
	defer conn.Close()
	return pipe(ctx, conn, stream)
}

// pipe copies between a connection and a stream both ways. When the stream
// ends its input, the connection's write side is closed (a half-close, so
// the server still answers); pipe returns once the connection's output
// ends, or ctx does, and closes both. The copy toward the connection may
// still be blocked reading the stream then: it ends when the streaming
// server tears the stream down, as in upstream's runtimes.
func pipe(ctx context.Context, conn net.Conn, stream io.ReadWriteCloser) error {
	go func() {
		_, _ = io.Copy(conn, stream)
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}()
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(stream, conn)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
	}
	_ = conn.Close()
	_ = stream.Close()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("port-forward: %w", err)
	}
	return nil
}

// eofReader closes eof when its reader ends.
type eofReader struct {
	r    io.Reader
	once sync.Once
	eof  chan struct{}
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.eof) })
	}
	return n, err
}

// outputProgress tracks the writes of a process's output.
type outputProgress struct {
	last     atomic.Int64 // UnixNano of the end of the last write
	inflight atomic.Int32
}

func newOutputProgress() *outputProgress {
	p := &outputProgress{}
	p.last.Store(time.Now().UnixNano())
	return p
}

// idle is how long no write has been under way.
func (p *outputProgress) idle() time.Duration {
	if p.inflight.Load() > 0 {
		return 0
	}
	return time.Since(time.Unix(0, p.last.Load()))
}

// progressWriter reports its writes to an outputProgress.
type progressWriter struct {
	w io.Writer
	p *outputProgress
}

func (w *progressWriter) Write(b []byte) (int, error) {
	w.p.inflight.Add(1)
	defer func() {
		w.p.last.Store(time.Now().UnixNano())
		w.p.inflight.Add(-1)
	}()
	return w.w.Write(b)
}

// resizer is a process with a terminal (an exec'd process, a task).
type resizer interface {
	Resize(ctx context.Context, w, h uint32) error
}

// forwardResizes passes terminal sizes on to p until ctx ends or resize is
// closed.
func forwardResizes(ctx context.Context, resize <-chan remotecommand.TerminalSize, p resizer) {
	for {
		select {
		case <-ctx.Done():
			return
		case sz, ok := <-resize:
			if !ok {
				return
			}
			if sz.Width > 0 && sz.Height > 0 {
				_ = p.Resize(ctx, uint32(sz.Width), uint32(sz.Height))
			}
		}
	}
}

package containerd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	client "github.com/containerd/containerd/v2/client"
)

// maxSocketPath is the longest path a unix socket address can have
// (sun_path is 108 bytes with its terminating NUL); containerd also listens
// on "<socket>.ttrpc".
const maxSocketPath = 107 - len(".ttrpc")

// SupervisorConfig configures a containerd that a Supervisor runs.
type SupervisorConfig struct {
	// Dir holds everything the containerd writes: config.toml, root/
	// (content, snapshots, metadata), state/ (shim bundles), opt/,
	// containerd.sock and containerd.log. Keep it short: the socket path
	// must fit in 101 bytes.
	Dir string
	// Binary is the containerd executable (default "containerd", looked up
	// in PATH).
	Binary string
	// LogLevel is containerd's log level (default "info").
	LogLevel string
	// StartTimeout bounds each wait for containerd to serve (default 30s).
	StartTimeout time.Duration
	// StopTimeout is how long containerd gets to exit after SIGTERM before
	// SIGKILL (default 10s).
	StopTimeout time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// OnChange, when set, is called when containerd exits (false) and
	// when a restart serves again (true), so the node can say so at once.
	OnChange func(serving bool)
}

func (c *SupervisorConfig) validate() error {
	if c.Dir == "" {
		return errors.New("containerd: supervisor: no directory")
	}
	if !filepath.IsAbs(c.Dir) {
		return fmt.Errorf("containerd: supervisor: directory %q is not absolute", c.Dir)
	}
	if n := len(c.socket()); n > maxSocketPath {
		return fmt.Errorf("containerd: supervisor: socket path %s is %d bytes, longer than the %d a unix socket allows: use a shorter directory", c.socket(), n, maxSocketPath)
	}
	if c.Binary == "" {
		c.Binary = "containerd"
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 30 * time.Second
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

func (c *SupervisorConfig) socket() string { return filepath.Join(c.Dir, "containerd.sock") }

// ConfigTOML returns the containerd configuration (version 2, understood
// by containerd 1.6 and 1.7) for a containerd living in dir: its own root,
// state, socket and opt directory, and the CRI plugin disabled (the kubelet
// drives containerd through its native API).
func ConfigTOML(dir, logLevel string) string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	return strings.Join([]string{
		"version = 2",
		"root = " + q(filepath.Join(dir, "root")),
		"state = " + q(filepath.Join(dir, "state")),
		`disabled_plugins = ["io.containerd.grpc.v1.cri"]`,
		"",
		"[grpc]",
		"  address = " + q(filepath.Join(dir, "containerd.sock")),
		"",
		"[debug]",
		"  level = " + q(logLevel),
		"",
		"[plugins]",
		`  [plugins."io.containerd.internal.v1.opt"]`,
		"    path = " + q(filepath.Join(dir, "opt")),
		"",
	}, "\n")
}

// Supervisor runs a containerd of its own and restarts it when it dies.
// The containers survive a restart of containerd, and of the kubelet: their
// shims are not children of containerd. Stopping the supervisor (cancelling
// the context given to StartSupervisor) stops containerd but not the
// containers.
type Supervisor struct {
	cfg  SupervisorConfig
	done chan struct{}
	// forks runs the process starts on one OS thread that lives as long as
	// the supervisor: the parent-death signal fires when the thread that
	// forked exits, and Go ends threads whose goroutine exits while locked
	// to them (as the network namespace code does).
	forks chan func()

	mu       sync.Mutex
	cmd      *exec.Cmd
	restarts int
}

// StartSupervisor writes the configuration, starts containerd and returns
// once it serves. It then keeps containerd running until ctx ends, when it
// stops it (SIGTERM, then SIGKILL after StopTimeout).
func StartSupervisor(ctx context.Context, cfg SupervisorConfig) (*Supervisor, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath(cfg.Binary); err != nil {
		return nil, fmt.Errorf("containerd: supervisor: %w (install the Debian package containerd)", err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o711); err != nil {
		return nil, fmt.Errorf("containerd: supervisor: %w", err)
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir, "config.toml"), []byte(ConfigTOML(cfg.Dir, cfg.LogLevel)), 0o600); err != nil {
		return nil, fmt.Errorf("containerd: supervisor: writing config.toml: %w", err)
	}
	s := &Supervisor{cfg: cfg, done: make(chan struct{}), forks: make(chan func())}
	go func() {
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		for f := range s.forks {
			f()
		}
	}()
	exited, err := s.start(ctx)
	if err != nil {
		close(s.forks)
		return nil, err
	}
	go func() {
		defer close(s.forks)
		s.supervise(ctx, exited)
	}()
	return s, nil
}

// Address is the containerd socket.
func (s *Supervisor) Address() string { return s.cfg.socket() }

// LogPath is the file containerd logs to.
func (s *Supervisor) LogPath() string { return filepath.Join(s.cfg.Dir, "containerd.log") }

// PID is the process ID of the running containerd (0 while none runs).
func (s *Supervisor) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Restarts is how often containerd was restarted after dying.
func (s *Supervisor) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// Wait blocks until the supervisor has stopped containerd after its context
// ended. Until then it restarts containerd whenever it dies, with a backoff
// of one to thirty seconds.
func (s *Supervisor) Wait() { <-s.done }

// start runs containerd and waits until it serves. The returned channel
// receives its exit.
func (s *Supervisor) start(ctx context.Context) (<-chan error, error) {
	logf, err := os.OpenFile(s.LogPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("containerd: supervisor: opening the log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(s.cfg.Binary, "--config", filepath.Join(s.cfg.Dir, "config.toml"))
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so that a terminal's signals do not reach it;
	// SIGTERM when the kubelet dies, so that a restarted kubelet starts a
	// fresh containerd on the same directories (the shims, and so the
	// containers, live on).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	started := make(chan error, 1)
	s.forks <- func() { started <- cmd.Start() }
	if err := <-started; err != nil {
		return nil, fmt.Errorf("containerd: supervisor: starting %s: %w", s.cfg.Binary, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()

	ready := make(chan error, 1)
	readyCtx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	go func() { ready <- waitServing(readyCtx, s.Address()) }()
	select {
	case err := <-ready:
		if err == nil {
			s.cfg.Logger.Debug("containerd serving", "pid", cmd.Process.Pid, "address", s.Address())
			return exited, nil
		}
		s.kill(cmd, exited)
		return nil, fmt.Errorf("containerd: supervisor: containerd did not serve on %s: %w; log tail:\n%s", s.Address(), err, tail(s.LogPath(), 20))
	case err := <-exited:
		cancel()
		<-ready
		return nil, fmt.Errorf("containerd: supervisor: containerd exited while starting (%v); log tail:\n%s", err, tail(s.LogPath(), 20))
	}
}

// waitServing polls the health service until containerd answers SERVING.
func waitServing(ctx context.Context, address string) error {
	for {
		err := func() error {
			if _, err := os.Stat(address); err != nil {
				return err
			}
			c, err := client.New(address, client.WithTimeout(time.Second))
			if err != nil {
				return err
			}
			defer c.Close()
			tctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			ok, err := c.IsServing(tctx)
			if err == nil && !ok {
				err = errors.New("not serving yet")
			}
			return err
		}()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// supervise restarts containerd when it exits and stops it when ctx ends.
func (s *Supervisor) supervise(ctx context.Context, exited <-chan error) {
	defer close(s.done)
	backoff := time.Second
	for {
		s.mu.Lock()
		cmd := s.cmd
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			s.kill(cmd, exited)
			s.cfg.Logger.Info("containerd stopped", "pid", cmd.Process.Pid)
			return
		case err := <-exited:
			s.cfg.Logger.Error("containerd exited; restarting", "pid", cmd.Process.Pid, "err", err, "backoff", backoff)
			s.changed(false)
		}
		for {
			select {
			case <-ctx.Done():
				s.mu.Lock()
				s.cmd = nil
				s.mu.Unlock()
				return
			case <-time.After(backoff):
			}
			var err error
			exited, err = s.start(ctx)
			if err == nil {
				s.mu.Lock()
				s.restarts++
				s.mu.Unlock()
				backoff = time.Second
				s.changed(true)
				break
			}
			s.cfg.Logger.Error("restarting containerd", "err", err)
			backoff = min(2*backoff, 30*time.Second)
		}
	}
}

func (s *Supervisor) changed(serving bool) {
	if s.cfg.OnChange != nil {
		s.cfg.OnChange(serving)
	}
}

// kill stops cmd: SIGTERM, then SIGKILL after StopTimeout.
func (s *Supervisor) kill(cmd *exec.Cmd, exited <-chan error) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(s.cfg.StopTimeout):
		_ = cmd.Process.Kill()
		<-exited
	}
	s.mu.Lock()
	if s.cmd == cmd {
		s.cmd = nil
	}
	s.mu.Unlock()
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

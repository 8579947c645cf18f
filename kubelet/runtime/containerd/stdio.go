package containerd

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/containerd/containerd/v2/pkg/cio"
)

// Labels recording how a container's standard streams were set up.
const (
	labelStdin = "io.kubebus.container.stdin" // "true": it has a stdin FIFO
	labelTTY   = "io.kubebus.container.tty"   // "true": it has a terminal
)

// consoleLogger is the program the shim runs to write a terminal's output
// to the log file: the shim can write a console only to a FIFO or to a
// logging binary, and a FIFO would need the kubelet to copy it, which a
// kubelet restart interrupts. The logger lives as long as the terminal,
// beside the shim.
const consoleLogger = "/bin/sh"

// stdinPath is the FIFO that feeds the stdin of container id. It lives in
// the runtime's directory, which survives kubelet restarts, so that an
// adopted container can still be attached to.
func (c *Config) stdinPath(id string) string { return filepath.Join(c.fifoDir(), id+"-stdin") }

// shimIO is a cio.IO that only describes the streams: the shim opens and
// copies them itself (the stdin FIFO into the process, the output into the
// log), so the kubelet holds nothing that a restart of it would cut.
type shimIO struct{ cfg cio.Config }

func (s *shimIO) Config() cio.Config { return s.cfg }
func (s *shimIO) Cancel()            {}
func (s *shimIO) Wait()              {}
func (s *shimIO) Close() error       { return nil }

// stdioCreator gives a task a stdin FIFO at stdinPath ("": none) and, with
// tty, a terminal, writing its output (stdout and stderr) to logPath as
// cio.LogFile does for other containers. The shim holds the FIFO's write
// side open too, so the process sees the end of its input only when the
// task's stdin is closed (CloseIO), never because no one is attached.
func stdioCreator(stdinPath, logPath string, tty bool) cio.Creator {
	return func(string) (cio.IO, error) {
		if logPath == "" {
			logPath = os.DevNull
		}
		if stdinPath != "" {
			if err := makeFIFO(stdinPath); err != nil {
				return nil, err
			}
		}
		cfg := cio.Config{Stdin: stdinPath, Terminal: tty}
		out := (&url.URL{Scheme: "file", Path: logPath}).String()
		if tty {
			out = consoleLoggerURI(logPath)
		}
		cfg.Stdout, cfg.Stderr = out, out
		return &shimIO{cfg: cfg}, nil
	}
}

// consoleLoggerURI is the binary:// URI of a logger that appends what the
// shim hands it on fd 3 (the terminal's output) to logPath. The shim
// passes the query's key and value as the program's arguments, and waits
// for fd 5 to be closed as the sign that the logger is ready.
func consoleLoggerURI(logPath string) string {
	script := "exec 4>&- 5>&-; PATH=/usr/bin:/bin exec cat <&3 >>" + shellQuote(logPath)
	u := url.URL{Scheme: "binary", Path: consoleLogger, RawQuery: url.Values{"-c": {script}}.Encode()}
	return u.String()
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// makeFIFO creates a FIFO at path, replacing whatever was there.
func makeFIFO(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("containerd: creating the stdin FIFO: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("containerd: creating the stdin FIFO: %w", err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		return fmt.Errorf("containerd: creating the stdin FIFO %s: %w", path, err)
	}
	return nil
}

// openStdin opens the stdin FIFO at path for writing. It fails at once
// (rather than blocking) when the shim no longer reads it.
func openStdin(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("containerd: opening the stdin of the container: %w", err)
	}
	return f, nil
}

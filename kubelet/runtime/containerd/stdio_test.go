package containerd

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/remotecommand"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// TestConsoleLoggerURI: the shim runs sh with the query's key and value as
// arguments, and the script appends fd 3 to the log, however its path is
// spelled.
func TestConsoleLoggerURI(t *testing.T) {
	log := filepath.Join(t.TempDir(), "it's a log")
	u, err := url.Parse(consoleLoggerURI(log))
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "binary" || u.Path != consoleLogger {
		t.Fatalf("URI %s", u)
	}
	var args []string
	for k, vs := range u.Query() { // as the shim's NewBinaryCmd does
		args = append(args, k, vs[0])
	}
	if err := os.WriteFile(log, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	readyR, readyW, _ := os.Pipe()
	cmd := exec.Command(u.Path, args...)
	cmd.ExtraFiles = []*os.File{outR, errR, readyW}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outR.Close()
	errR.Close()
	readyW.Close()
	errW.Close()
	if _, err := readyR.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("ready signal: %v, want EOF", err)
	}
	_, _ = outW.Write([]byte("from the terminal\r\n"))
	outW.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(log)
	if string(b) != "before\nfrom the terminal\r\n" {
		t.Errorf("log %q", b)
	}
}

// syncBuffer is an io.Writer safe for the attach's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// attach runs rt.Attach in the background; the returned channel gets its
// result.
func attach(rt *Runtime, id string, stdin io.Reader, out io.Writer, resize <-chan remotecommand.TerminalSize, once bool) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		done <- rt.Attach(ctx, id, stdin, out, resize, once)
	}()
	return done
}

func waitAttach(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: attach did not end", what)
	}
}

func waitOutput(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	eventually(t, 20*time.Second, fmt.Sprintf("attach output shows %q", want), func() error {
		if !strings.Contains(out.String(), want) {
			return fmt.Errorf("output %q", out.String())
		}
		return nil
	})
}

// attachUntil attaches to container id, sends input and keeps the input
// open until want shows in the output, then closes it and waits for the
// attach to end. (Once its input has ended an attach stops after a quiet
// spell, which on a loaded machine can come before the answer reaches the
// container's log.)
func attachUntil(t *testing.T, rt *Runtime, id, input, want, what string) {
	t.Helper()
	var out syncBuffer
	inR, inW := io.Pipe()
	done := attach(rt, id, inR, &out, nil, false)
	if _, err := io.WriteString(inW, input); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	waitOutput(t, &out, want)
	inW.Close()
	waitAttach(t, done, what)
}

func TestIntegrationAttachStdin(t *testing.T) {
	requireContainerd(t)
	e := startEnv(t, envOptions{podCIDR: "10.244.83.0/24"})
	ctx := context.Background()
	e.importBusybox(t)
	sb, err := e.rt.RunPodSandbox(ctx, runtime.SandboxConfig{PodUID: "uid-attach", Name: "attach", Namespace: "default", HostNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(e.dir, "logs")
	logOf := func(name string) string { return filepath.Join(logs, name+".log") }

	// stdin: true, as cat: every attach's input reaches it, and its stdin
	// stays open between attaches.
	catID := runContainer(t, e.rt, sb, runtime.ContainerConfig{Name: "cat", Command: []string{"cat"}, Stdin: true, LogPath: logOf("cat")})
	// stdin: true and stdinOnce: the first attach's end closes its stdin.
	onceID := runContainer(t, e.rt, sb, runtime.ContainerConfig{Name: "once", Command: []string{"sh", "-c", "cat; echo stdin-closed"}, Stdin: true, LogPath: logOf("once")})
	// tty and stdin: a shell on a terminal.
	shID := runContainer(t, e.rt, sb, runtime.ContainerConfig{Name: "sh", Command: []string{"sh"}, Stdin: true, TTY: true, LogPath: logOf("sh")})
	// tty alone: a terminal without input, its output in the log.
	ttyID := runContainer(t, e.rt, sb, runtime.ContainerConfig{Name: "tty", Command: []string{"sh", "-c", "[ -t 1 ] && echo out-on-a-tty; exec sleep 3600"}, TTY: true, LogPath: logOf("tty")})
	// Neither: output only, input dropped.
	plainID := runContainer(t, e.rt, sb, runtime.ContainerConfig{Name: "plain", Command: []string{"sh", "-c", "while true; do echo tick; sleep 0.2; done"}, LogPath: logOf("plain")})

	eventually(t, 20*time.Second, "the tty container's output reaches its log", func() error {
		if b, _ := os.ReadFile(logOf("tty")); string(b) != "out-on-a-tty\r\n" {
			return fmt.Errorf("log %q", b)
		}
		return nil
	})
	if _, err := os.Stat(e.cfg.stdinPath(ttyID)); !os.IsNotExist(err) {
		t.Errorf("tty container without stdin has a stdin FIFO: %v", err)
	}

	attachCat := func(line, what string) { attachUntil(t, e.rt, catID, line+"\n", line, what) }
	attachCat("hello", "attach -i to cat")
	attachCat("again", "second attach -i to cat")
	if c, err := e.rt.ContainerStatus(ctx, catID); err != nil || c.State != runtime.ContainerRunning {
		t.Errorf("cat after two attaches: %+v %v; want it running, its stdin open", c, err)
	}
	if b, _ := os.ReadFile(logOf("cat")); string(b) != "hello\nagain\n" {
		t.Errorf("cat's log %q", b)
	}

	var onceOut syncBuffer
	waitAttach(t, attach(e.rt, onceID, strings.NewReader("only once\n"), &onceOut, nil, true), "attach -i to a stdinOnce container")
	if got := onceOut.String(); !strings.Contains(got, "only once\n") || !strings.Contains(got, "stdin-closed") {
		t.Errorf("attach to the stdinOnce container: output %q", got)
	}
	if c := containerExit(t, e.rt, onceID); c.ExitCode != 0 {
		t.Errorf("stdinOnce container: %+v", c)
	}

	// The terminal: resized, then a command, then exit.
	var shOut syncBuffer
	inR, inW := io.Pipe()
	resize := make(chan remotecommand.TerminalSize, 1)
	resize <- remotecommand.TerminalSize{Width: 97, Height: 31}
	shDone := attach(e.rt, shID, inR, &shOut, resize, false)
	time.Sleep(300 * time.Millisecond) // the resize goes first
	if _, err := io.WriteString(inW, "stty size; [ -t 0 ] && echo on-a-$((6*7))-tty\n"); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, &shOut, "on-a-42-tty")
	waitOutput(t, &shOut, "31 97")

	// A restart of containerd and a new runtime, as a restarted kubelet:
	// the shell's terminal and stdin are the shim's, and still work.
	inW.Close()
	waitAttach(t, shDone, "attach -it to sh")
	first := e.sup.PID()
	if err := killPID(first); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "containerd restarts", func() error {
		if e.sup.Restarts() < 1 || e.sup.PID() == 0 {
			return fmt.Errorf("restarts %d, pid %d", e.sup.Restarts(), e.sup.PID())
		}
		return nil
	})
	rt2 := e.newRuntime(t)
	e.rt = rt2
	attachUntil(t, rt2, shID, "echo adopted-$((1+1))\n", "adopted-2", "attach -it to sh after the restart")
	attachUntil(t, rt2, catID, "still here\n", "still here", "attach -i to cat after the restart")
	b, _ := os.ReadFile(logOf("sh"))
	if !strings.Contains(string(b), "on-a-42-tty\r\n") || !strings.Contains(string(b), "adopted-2\r\n") {
		t.Errorf("sh's log (the terminal's output) %q", b)
	}
	done := attach(e.rt, shID, strings.NewReader("exit 3\n"), io.Discard, nil, false)
	waitAttach(t, done, "exit through attach")
	if c := containerExit(t, e.rt, shID); c.ExitCode != 3 {
		t.Errorf("sh after exit 3: %+v", c)
	}

	// Input to a container without stdin is dropped; the output streams.
	var plainOut syncBuffer
	ctx2, cancel := context.WithCancel(ctx)
	pdone := make(chan error, 1)
	go func() { pdone <- e.rt.Attach(ctx2, plainID, strings.NewReader("ignored\n"), &plainOut, nil, false) }()
	waitOutput(t, &plainOut, "tick")
	cancel()
	if err := <-pdone; err != nil {
		t.Errorf("attach to the plain container: %v", err)
	}
	if _, err := os.Stat(e.cfg.stdinPath(plainID)); !os.IsNotExist(err) {
		t.Errorf("plain container has a stdin FIFO: %v", err)
	}
	if err := e.rt.RemoveContainer(ctx, catID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(e.cfg.stdinPath(catID)); !os.IsNotExist(err) {
		t.Errorf("stdin FIFO after the container's removal: %v", err)
	}
}

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/test/harness"
	"github.com/kubebus/kubebus/test/prereq"
)

// execPods are the pods the exec tests use: "shell", two containers that
// say which they are, one of them ticking to its output; "interactive",
// a cat with stdin and a shell with stdin on a terminal, to attach to;
// "web", a busybox httpd behind the Service "web".
const execPods = `apiVersion: v1
kind: Pod
metadata:
  name: shell
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    env: [{name: WHO, value: main}]
    command: ["sh", "-c", "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done"]
  - name: side
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    env: [{name: WHO, value: side}]
    # kubectl cp runs tar, which the test's busybox image does not link.
    command: ["sh", "-c", "mkdir -p /usr/local/bin && ln -s /bin/busybox /usr/local/bin/tar && exec sleep 3600"]
---
apiVersion: v1
kind: Pod
metadata:
  name: interactive
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: cat
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    command: ["cat"]
    stdin: true
  - name: tty
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    command: ["sh"]
    stdin: true
    tty: true
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: exec-web}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: httpd
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "mkdir -p /www && echo hello from web > /www/index.html && exec httpd -f -p 8080 -h /www"]
    ports:
    - containerPort: 8080
    readinessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: exec-web}
  ports:
  - port: 80
    targetPort: 8080
`

// execKubectl is one kubectl to drive exec with, and the environment that
// picks its protocol.
type execKubectl struct {
	s   *harness.Server
	bin string
	env []string
}

// command builds a kubectl command with the server's kubeconfig.
func (k execKubectl) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, k.bin, append([]string{"--kubeconfig", k.s.Kubeconfig}, args...)...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+k.s.Kubeconfig, "HOME="+k.s.Dir), k.env...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs kubectl with stdin and returns stdout, stderr and its exit code
// (-1 when it did not exit on its own).
func (k execKubectl) run(t *testing.T, stdin io.Reader, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := k.command(ctx, args...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errb.String(), 0
	case errors.As(err, &ee) && ee.Exited():
		return out.String(), errb.String(), ee.ExitCode()
	}
	t.Fatalf("kubectl %s: %v\nstderr: %s", strings.Join(args, " "), err, errb.String())
	return "", "", -1
}

// must runs kubectl and fails unless it exits 0.
func (k execKubectl) must(t *testing.T, stdin io.Reader, args ...string) string {
	t.Helper()
	out, errs, code := k.run(t, stdin, args...)
	if code != 0 {
		t.Fatalf("kubectl %s exited %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// TestIntegrationExec drives exec, attach, cp and port-forward through the
// API server to the node's kubelet with the pinned kubectl 1.32 and 1.33,
// each over its default WebSocket protocols and over SPDY.
func TestIntegrationExec(t *testing.T) {
	s, node := harness.StartServerWithNode(t)
	cs := s.Clientset(t)
	s.MustRun(t, harness.Kubectl(t), execPods, "apply", "-f", "-")
	harness.Eventually(t, 90*time.Second, func() error {
		for _, name := range []string{"shell", "interactive", "web"} {
			p, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if p.Status.Phase != corev1.PodRunning || !ready(p) {
				return fmt.Errorf("pod %s is %s", name, p.Status.Phase)
			}
		}
		return nil
	})
	t.Run("node credentials cannot exec", func(t *testing.T) {
		k := execKubectl{s: s, bin: harness.Kubectl(t)}
		nodeCfg := harness.NodeKubeconfig(t, s, node.Name)
		for _, args := range [][]string{
			{"exec", "shell", "-c", "main", "--", "true"},
			{"attach", "shell", "-c", "main"},
			{"port-forward", "pod/web", fmt.Sprintf("%d:8080", harness.FreePort(t))},
		} {
			// The later --kubeconfig wins.
			_, errs, code := k.run(t, nil, append([]string{"--kubeconfig", nodeCfg}, args...)...)
			sub := map[string]string{"exec": "pods/exec", "attach": "pods/attach", "port-forward": "pods/portforward"}[args[0]]
			if code == 0 || !strings.Contains(errs, "system:node:"+node.Name) || !strings.Contains(errs, sub) {
				t.Fatalf("kubectl %s as the node: exit %d, stderr %q; want refused on %s", args[0], code, errs, sub)
			}
		}
	})
	for _, minor := range []string{"1.32", "1.33"} {
		for _, proto := range []struct {
			name   string
			env    []string
			method string // of the upgrade request
		}{
			{"websocket", []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true", "KUBECTL_PORT_FORWARD_WEBSOCKETS=true"}, "GET"},
			{"spdy", []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false", "KUBECTL_PORT_FORWARD_WEBSOCKETS=false"}, "POST"},
		} {
			t.Run(minor+"/"+proto.name, func(t *testing.T) {
				bin := harness.PinnedKubectl(t, minor)
				if bin == "" {
					prereq.Missing(t, "kubectl.%s not found on PATH or beside the stock kubectl", minor)
				}
				k := execKubectl{s: s, bin: bin, env: proto.env}
				t.Run("protocol", func(t *testing.T) {
					// kubectl logs the upgrade request at -v=6; a WebSocket
					// one has no fallback to SPDY (POST) after it.
					_, errs, code := k.run(t, nil, "-v=6", "exec", "shell", "-c", "main", "--", "true")
					n := strings.Count(errs, "/exec?")
					logged := strings.Contains(errs, proto.method+" https://") || strings.Contains(errs, `verb="`+proto.method+`"`)
					if code != 0 || n != 1 || !logged || !strings.Contains(errs, "101 Switching Protocols") {
						t.Fatalf("exec -v=6: exit %d, %d upgrade requests, want one %s:\n%s", code, n, proto.method, errs)
					}
				})
				t.Run("exit code", func(t *testing.T) { execExitCode(t, k) })
				t.Run("background", func(t *testing.T) { execBackground(t, k) })
				t.Run("container", func(t *testing.T) { execContainer(t, k) })
				t.Run("stdin", func(t *testing.T) { execStdin(t, k) })
				t.Run("cp", func(t *testing.T) { execCp(t, k) })
				t.Run("port-forward pod", func(t *testing.T) { execPortForward(t, k, "pod/web", 8080) })
				t.Run("port-forward svc", func(t *testing.T) { execPortForward(t, k, "svc/web", 80) })
				t.Run("attach", func(t *testing.T) { execAttach(t, k) })
				t.Run("tty", func(t *testing.T) { execTTY(t, k) })
			})
		}
	}
}

// execExitCode: the command's output arrives and its exit code is
// kubectl's.
func execExitCode(t *testing.T, k execKubectl) {
	out, errs, code := k.run(t, nil, "exec", "shell", "-c", "main", "--", "sh", "-c", "echo hi; echo oops >&2; exit 3")
	if code != 3 || out != "hi\n" || !strings.Contains(errs, "oops") {
		t.Fatalf("exit code %d, stdout %q, stderr %q; want 3, \"hi\\n\", oops", code, out, errs)
	}
	if out := k.must(t, nil, "exec", "shell", "-c", "main", "--", "true"); out != "" {
		t.Fatalf("exec true printed %q", out)
	}
}

// execBackground: a command that leaves a process holding its output
// open still ends, with its output, soon after it exits.
func execBackground(t *testing.T, k execKubectl) {
	start := time.Now()
	out := k.must(t, nil, "exec", "shell", "-c", "main", "--", "sh", "-c", "sleep 60 & echo started")
	if took := time.Since(start); out != "started\n" || took > 10*time.Second {
		t.Fatalf("printed %q and took %v", out, took)
	}
}

// execContainer: -c picks the container.
func execContainer(t *testing.T, k execKubectl) {
	for _, c := range []string{"main", "side"} {
		if out := k.must(t, nil, "exec", "shell", "-c", c, "--", "sh", "-c", "echo $WHO"); out != c+"\n" {
			t.Fatalf("exec -c %s printed %q", c, out)
		}
	}
	_, errs, code := k.run(t, nil, "exec", "shell", "-c", "nope", "--", "true")
	if code == 0 || !strings.Contains(errs, "nope") {
		t.Fatalf("exec -c nope: exit %d, stderr %q", code, errs)
	}
}

// execStdin: -i copies stdin to the command, whose end it sees.
func execStdin(t *testing.T, k execKubectl) {
	in := strings.Repeat("0123456789", 10000) + "\n"
	out := k.must(t, strings.NewReader(in), "exec", "-i", "shell", "-c", "main", "--", "sh", "-c", "wc -c; echo done")
	if out != fmt.Sprintf("%d\ndone\n", len(in)) {
		t.Fatalf("exec -i wc -c printed %q, want %d", out, len(in))
	}
}

// execCp: kubectl cp of 1 MB into the pod and back is byte-identical.
func execCp(t *testing.T, k execKubectl) {
	dir := t.TempDir()
	data := make([]byte, 1<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	src, back := filepath.Join(dir, "src.bin"), filepath.Join(dir, "back.bin")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// kubectl cp resolves local paths against its working directory.
	k.must(t, nil, "cp", src, "default/shell:/tmp/cp.bin", "-c", "side")
	if out := k.must(t, nil, "exec", "shell", "-c", "side", "--", "wc", "-c", "/tmp/cp.bin"); !strings.HasPrefix(out, strconv.Itoa(len(data))+" ") {
		t.Fatalf("in the pod: %q", out)
	}
	k.must(t, nil, "cp", "default/shell:/tmp/cp.bin", back, "-c", "side")
	got, err := os.ReadFile(back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("copied back %d bytes that differ from the %d sent", len(got), len(data))
	}
}

// execPortForward: kubectl port-forward to the httpd, by pod and by
// Service, answers a request from the host.
func execPortForward(t *testing.T, k execKubectl, target string, port int) {
	local := harness.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := k.command(ctx, "port-forward", "--address", "127.0.0.1", target, fmt.Sprintf("%d:%d", local, port))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	forwarding := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		once := sync.Once{}
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "Forwarding from") {
				once.Do(func() { close(forwarding) })
			}
		}
	}()
	select {
	case <-forwarding:
	case <-time.After(30 * time.Second):
		t.Fatalf("kubectl port-forward %s did not start: %s", target, errb.String())
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for i := 0; i < 3; i++ { // several connections over one forward
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/", local))
		if err != nil {
			t.Fatalf("GET through port-forward %s: %v (kubectl: %s)", target, err, errb.String())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "hello from web\n" {
			t.Fatalf("GET through port-forward %s: %s %q", target, resp.Status, body)
		}
	}
}

// execAttach: kubectl attach shows what the container writes from now on;
// with -i its input reaches a container with stdin (which keeps it open
// across attaches), and with -it a container's terminal answers, resized.
func execAttach(t *testing.T, k execKubectl) {
	t.Run("output", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cmd := k.command(ctx, "attach", "shell", "-c", "main")
		var out lockedBuffer
		var errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		harness.Eventually(t, 20*time.Second, func() error {
			if n := strings.Count(out.String(), "tick "); n < 3 {
				return fmt.Errorf("attach printed %d ticks: %q (stderr %q)", n, out.String(), errb.String())
			}
			return nil
		})
	})
	t.Run("stdin", func(t *testing.T) {
		token := rand.Text()
		// kubectl attach ends the session when its input ends, which can
		// be before cat's answer is back: the input stays open until the
		// answer is seen (or 20 s have passed).
		line := "echo " + token + "\n"
		answered := make(chan struct{})
		out := &watchedBuffer{want: line, seen: answered}
		in := &inputUntil{data: []byte(line), done: answered, wait: 20 * time.Second}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := k.command(ctx, "attach", "-i", "interactive", "-c", "cat")
		var errb bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, &errb
		if err := cmd.Run(); err != nil || !strings.Contains(out.String(), line) {
			t.Fatalf("attach -i to cat: %v, stdout %q, stderr %q; want its input echoed", err, out.String(), errb.String())
		}
		harness.Eventually(t, 20*time.Second, func() error {
			logs, errs, code := k.run(t, nil, "logs", "interactive", "-c", "cat")
			if code != 0 || !strings.Contains(logs, "echo "+token+"\n") {
				return fmt.Errorf("logs of cat: exit %d, %q, stderr %q", code, logs, errs)
			}
			return nil
		})
	})
	t.Run("tty", func(t *testing.T) { attachTTY(t, k) })
}

// attachTTY: kubectl attach -it under a pseudo-terminal to a container's
// shell on a terminal: a command typed and its output, the terminal's size
// and a resize, seen by the shell. kubectl is then stopped, which leaves
// the shell running.
func attachTTY(t *testing.T, k execKubectl) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := k.command(ctx, "attach", "-it", "interactive", "-c", "tty")
	cmd.Env = append(cmd.Env, "TERM=dumb")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait(); ptmx.Close() }()
	var out lockedBuffer
	go func() { _, _ = io.Copy(&out, ptmx) }()
	token := rand.Text()[:8]
	// The attach may start after the first line is typed: type until the
	// answer shows.
	harness.Eventually(t, 20*time.Second, func() error {
		if _, err := ptmx.Write([]byte("echo " + token + "-$((6*7)); busybox stty size\r")); err != nil {
			return err
		}
		time.Sleep(300 * time.Millisecond)
		if !strings.Contains(out.String(), token+"-42") || !strings.Contains(out.String(), "40 100") {
			return fmt.Errorf("the terminal shows %q", out.String())
		}
		return nil
	})
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 33, Cols: 77}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 20*time.Second, func() error {
		if _, err := ptmx.Write([]byte("busybox stty size\r")); err != nil {
			return err
		}
		time.Sleep(300 * time.Millisecond)
		if !strings.Contains(out.String(), "33 77") {
			return fmt.Errorf("after a resize the terminal shows %q", out.String())
		}
		return nil
	})
}

// execTTY: kubectl exec -it under a pseudo-terminal: a prompt, a command
// typed and its output, a resize seen by the shell, exit.
func execTTY(t *testing.T, k execKubectl) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := k.command(ctx, "exec", "-it", "shell", "-c", "main", "--", "sh")
	cmd.Env = append(cmd.Env, "TERM=dumb")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	var out lockedBuffer
	go func() { _, _ = io.Copy(&out, ptmx) }()
	expect := func(what string) {
		t.Helper()
		harness.Eventually(t, 20*time.Second, func() error {
			if !strings.Contains(out.String(), what) {
				return fmt.Errorf("the terminal shows %q, not %q", out.String(), what)
			}
			return nil
		})
	}
	expect("# ") // busybox sh's root prompt
	if _, err := ptmx.Write([]byte("echo $((6*7))x; busybox stty size\r")); err != nil {
		t.Fatal(err)
	}
	expect("42x")
	expect("40 100")
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 33, Cols: 77}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 20*time.Second, func() error {
		if _, err := ptmx.Write([]byte("busybox stty size\r")); err != nil {
			return err
		}
		time.Sleep(300 * time.Millisecond)
		if !strings.Contains(out.String(), "33 77") {
			return fmt.Errorf("after a resize the terminal shows %q", out.String())
		}
		return nil
	})
	if _, err := ptmx.Write([]byte("exit 5\r")); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 5 {
		t.Fatalf("kubectl exec -it after exit 5: %v; terminal: %q", err, out.String())
	}
}

// inputUntil is an input that gives data, then ends when done closes or
// after wait.
type inputUntil struct {
	data []byte
	done <-chan struct{}
	wait time.Duration
}

func (in *inputUntil) Read(p []byte) (int, error) {
	if len(in.data) > 0 {
		n := copy(p, in.data)
		in.data = in.data[n:]
		return n, nil
	}
	select {
	case <-in.done:
	case <-time.After(in.wait):
	}
	return 0, io.EOF
}

// watchedBuffer is an output that closes seen once it holds want.
type watchedBuffer struct {
	lockedBuffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *watchedBuffer) Write(p []byte) (int, error) {
	n, err := w.lockedBuffer.Write(p)
	if strings.Contains(w.lockedBuffer.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

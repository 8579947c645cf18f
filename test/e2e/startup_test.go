package e2e

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubebus/kubebus/test/harness"
	"github.com/kubebus/kubebus/test/prereq"
)

// TestIntegrationServerMissingCNIPlugin: without the CNI plugins the local
// node cannot start, so `kubebus server` exits at once, non-zero, with one
// line naming the missing plugin and the fix.
func TestIntegrationServerMissingCNIPlugin(t *testing.T) {
	harness.SkipShort(t)
	prereq.Root(t, "start a local node")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, harness.Binary(t), "server", "--data-dir", dir,
		"--secure-port", "0", "--etcd-client-port", "0", "--etcd-peer-port", "0", "--nats-port", "-1", "--port", "0",
		"--cni-bin-dir", t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("kubebus server still running after 10s; stderr:\n%s", stderr.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("kubebus server: %v, want a non-zero exit; stderr:\n%s", err, stderr.String())
	}
	out := stderr.String()
	if !strings.Contains(out, `"bridge"`) || !strings.Contains(out, "containernetworking-plugins") {
		t.Fatalf("stderr does not name the missing bridge plugin and its package:\n%s", out)
	}
	if strings.Contains(out, "embedded etcd ready") {
		t.Errorf("etcd started before the local node's check:\n%s", out)
	}
	t.Logf("exited %d after %v: %s", exit.ExitCode(), time.Since(start).Round(time.Millisecond), strings.TrimSpace(out))
}

// TestIntegrationServerQuietStartCleanStop: a clean start with the local
// node logs at most 15 INFO lines until the ready banner (printed once the
// node is Ready), and SIGTERM stops it with no ERROR and exit code 0.
func TestIntegrationServerQuietStartCleanStop(t *testing.T) {
	harness.SkipShort(t)
	ns := harness.NodeNetNS(t)
	dir, err := os.MkdirTemp("", "kbq-") // short: containerd's socket path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { harness.CleanupNodeDir(t, dir) })
	name := "node-" + filepath.Base(ns)[4:]
	cmd := exec.Command(harness.Binary(t), "server", "--data-dir", dir,
		"--secure-port", "0", "--etcd-client-port", "0", "--etcd-peer-port", "0", "--nats-port", "-1", "--port", "0",
		"--node-netns", ns, "--hostname-override", name)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var mu sync.Mutex
	var lines []string
	readyAt := -1 // index into lines when the banner came
	var readers sync.WaitGroup
	readers.Add(2)
	banner := make(chan string, 1)
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
		}
	}()
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "kubebus is ready at") {
				mu.Lock()
				readyAt = len(lines)
				mu.Unlock()
				banner <- sc.Text()
			}
		}
	}()
	go func() { readers.Wait(); done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	var line string
	select {
	case line = <-banner:
	case err := <-done:
		t.Fatalf("kubebus server exited before it was ready: %v\n%s", err, strings.Join(lines, "\n"))
	case <-time.After(90 * time.Second):
		t.Fatalf("no ready banner after 90s:\n%s", strings.Join(lines, "\n"))
	}
	if want := regexp.MustCompile(`^kubebus is ready at https://127\.0\.0\.1:\d+ \(node ` + regexp.QuoteMeta(name) + ` Ready after [0-9.]+m?s\)$`); !want.MatchString(line) {
		t.Errorf("banner %q does not match %v", line, want)
	}
	t.Log(line)

	// The banner means the node is Ready in the API.
	kubeconfig := filepath.Join(dir, "kubeconfig")
	out, err := exec.Command(harness.Kubectl(t), "--kubeconfig", kubeconfig, "get", "node", name,
		"-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "True" {
		t.Errorf("after the banner, node %s Ready = %q (%v)", name, out, err)
	}

	mu.Lock()
	startLines := append([]string(nil), lines[:readyAt]...)
	mu.Unlock()
	var infos []string
	for _, l := range startLines {
		if strings.Contains(l, "level=INFO") {
			infos = append(infos, l)
		}
		if strings.Contains(l, "level=ERROR") {
			t.Errorf("ERROR during a clean start: %s", l)
		}
	}
	if len(infos) > 15 || len(infos) == 0 {
		t.Errorf("%d INFO lines until the node was Ready, want 1..15:\n%s", len(infos), strings.Join(infos, "\n"))
	}
	t.Logf("%d INFO lines until Ready", len(infos))

	mu.Lock()
	stopFrom := len(lines)
	mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("kubebus server after SIGTERM: %v, want exit code 0", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("kubebus server still running 60s after SIGTERM")
	}
	for _, l := range lines[stopFrom:] { // the readers are done
		if strings.Contains(l, "level=ERROR") {
			t.Errorf("ERROR after SIGTERM: %s", l)
		}
	}
	if t.Failed() {
		t.Logf("logs after SIGTERM:\n%s", strings.Join(lines[stopFrom:], "\n"))
	}
}

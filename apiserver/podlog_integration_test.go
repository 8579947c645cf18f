package apiserver_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/apiserver"
	kserver "github.com/kubebus/kubebus/kubelet/server"
	"github.com/kubebus/kubebus/test/harness"
)

// logFile is one container log the test kubelet serves.
type logFile struct {
	path    string
	running atomic.Bool
}

func (l *logFile) append(t *testing.T, s string) {
	t.Helper()
	f, err := os.OpenFile(l.path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// logLocator maps "ns/pod/container" (plus "/previous") to log files.
type logLocator map[string]*logFile

func (l logLocator) LogPath(_ context.Context, ns, pod, container string, previous bool) (string, func() bool, error) {
	key := ns + "/" + pod + "/" + container
	if previous {
		key += "/previous"
	}
	f, ok := l[key]
	switch {
	case !ok && previous:
		return "", nil, kserver.PreviousNotFound(pod, container)
	case !ok:
		return "", nil, kserver.ContainerNotFound(pod, container)
	}
	return f.path, f.running.Load, nil
}

// TestIntegrationPodLogs runs `kubebus server` and a kubelet log server on
// 127.0.0.1 that a Node points at, and reads pods/log through client-go
// and the stock kubectl.
func TestIntegrationPodLogs(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "")
	cs := s.Clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The kubelet: a serving certificate from the cluster CA, and client
	// certificates required; only the API server's identity may read.
	const nodeName = "logs-node"
	pkiDir := filepath.Join(s.Dir, "pki")
	cert, err := kserver.IssueServingCert(kserver.CertConfig{CAFile: filepath.Join(pkiDir, "ca.crt"), CAKeyFile: filepath.Join(pkiDir, "ca.key"),
		NodeName: nodeName, Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	newLog := func(name, content string) *logFile {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return &logFile{path: p}
	}
	app := newLog("app.log", "one\ntwo\nthree\n")
	logs := logLocator{
		"default/single/app":          app,
		"default/single/app/previous": newLog("app-0.log", "the previous instance\n"),
		"default/multi/a":             newLog("a.log", "from a\n"),
		"default/multi/b":             newLog("b.log", "from b\n"),
	}
	kubelet, err := kserver.New(kserver.Config{Certificate: &cert, ClientCAFile: filepath.Join(pkiDir, "ca.crt"), Logs: logs,
		PollInterval: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
		Authorize: func(user string, _ []string) error {
			if user != apiserver.KubeletClientUser {
				return fmt.Errorf("user %q may not read logs", user)
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	kctx, stopKubelet := context.WithCancel(context.Background())
	kdone := make(chan error, 1)
	go func() { kdone <- kubelet.Serve(kctx, ln) }()
	t.Cleanup(func() { stopKubelet(); <-kdone })

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
	node, err = cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: nodeName}, {Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(ln.Addr().(*net.TCPAddr).Port)
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(name, node string, containers ...string) {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			// No scheduler binds a pod that names another scheduler.
			Spec: corev1.PodSpec{NodeName: node, SchedulerName: "kubebus-test-no-scheduler"}}
		for _, c := range containers {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "registry.example/app:1"})
		}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod("single", nodeName, "app")
	pod("multi", nodeName, "a", "b")
	pod("pending", "", "app")

	// Discovery lists pods/log, so kubectl finds it.
	rl, err := cs.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rl.APIResources, func(r metav1.APIResource) bool {
		return r.Name == "pods/log" && slices.Contains(r.Verbs, "get")
	}) {
		t.Errorf("discovery has no pods/log with get: %+v", rl.APIResources)
	}

	i := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name string
		pod  string
		opts corev1.PodLogOptions
		want string
	}{
		{"whole log", "single", corev1.PodLogOptions{}, "one\ntwo\nthree\n"},
		{"tail", "single", corev1.PodLogOptions{TailLines: i(2)}, "two\nthree\n"},
		{"limit", "single", corev1.PodLogOptions{LimitBytes: i(6)}, "one\ntw"},
		{"timestamps ignored", "single", corev1.PodLogOptions{Timestamps: true, Container: "app"}, "one\ntwo\nthree\n"},
		{"previous", "single", corev1.PodLogOptions{Previous: true}, "the previous instance\n"},
		{"named container", "multi", corev1.PodLogOptions{Container: "b"}, "from b\n"},
		{"follow of a stopped container", "single", corev1.PodLogOptions{Follow: true, TailLines: i(1)}, "three\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readLogs(ctx, t, cs, tc.pod, &tc.opts); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}

	for _, tc := range []struct {
		name     string
		pod      string
		opts     corev1.PodLogOptions
		wantCode int32
		wantMsg  string
	}{
		{"no such pod", "absent", corev1.PodLogOptions{}, 404, `pods "absent" not found`},
		{"no host", "pending", corev1.PodLogOptions{}, 400, "pod pending does not have a host assigned"},
		{"container not chosen", "multi", corev1.PodLogOptions{}, 400, "a container name must be specified for pod multi, choose one of: [a b]"},
		{"unknown container", "single", corev1.PodLogOptions{Container: "nope"}, 400, "container nope is not valid for pod single"},
		{"no previous", "multi", corev1.PodLogOptions{Container: "a", Previous: true}, 404, `previous terminated container "a" in pod "multi" not found`},
		{"invalid options", "single", corev1.PodLogOptions{TailLines: i(-1)}, 422, "must be greater than or equal to 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cs.CoreV1().Pods("default").GetLogs(tc.pod, &tc.opts).Stream(ctx)
			var se *apierrors.StatusError
			if !errors.As(err, &se) || se.ErrStatus.Code != tc.wantCode || !strings.Contains(se.ErrStatus.Message, tc.wantMsg) {
				t.Fatalf("error = %v, want %d with %q", err, tc.wantCode, tc.wantMsg)
			}
		})
	}

	t.Run("follow", func(t *testing.T) {
		app.running.Store(true)
		defer app.running.Store(false)
		rc, err := cs.CoreV1().Pods("default").GetLogs("single", &corev1.PodLogOptions{Follow: true}).Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		br := bufio.NewReader(rc)
		for _, want := range []string{"one\n", "two\n", "three\n"} {
			expectLine(t, br, want)
		}
		app.append(t, "four\n")
		expectLine(t, br, "four\n")
		app.append(t, "five\n")
		app.running.Store(false)
		rest, err := io.ReadAll(br)
		if err != nil || string(rest) != "five\n" {
			t.Fatalf("after the container stopped: %q, %v; want \"five\\n\" and the end", rest, err)
		}
	})

	t.Run("kubectl", func(t *testing.T) {
		kubectl := harness.Kubectl(t)
		all := "one\ntwo\nthree\nfour\nfive\n"
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"logs", "single"}, all},
			{[]string{"logs", "single", "--tail=1"}, "five\n"},
			{[]string{"logs", "single", "--previous"}, "the previous instance\n"},
			{[]string{"logs", "multi", "-c", "b"}, "from b\n"},
			{[]string{"logs", "pod/multi", "--container=a", "--limit-bytes=4"}, "from"},
		} {
			if got := s.MustRun(t, kubectl, "", tc.args...); got != tc.want {
				t.Errorf("kubectl %s = %q, want %q", strings.Join(tc.args, " "), got, tc.want)
			}
		}
		_, err := s.Run(t, kubectl, "", "logs", "pending")
		var ke *harness.KubectlError
		if !errors.As(err, &ke) || !strings.Contains(ke.Stderr, "pod pending does not have a host assigned") {
			t.Errorf("kubectl logs pending: %v", err)
		}
		_, err = s.Run(t, kubectl, "", "logs", "multi", "-c", "a", "--previous")
		if !errors.As(err, &ke) || !strings.Contains(ke.Stderr, `previous terminated container "a" in pod "multi" not found`) {
			t.Errorf("kubectl logs --previous without one: %v", err)
		}

		// kubectl logs -f streams lines written after it started and exits
		// when the container stops.
		app.running.Store(true)
		defer app.running.Store(false)
		cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", s.Kubeconfig, "logs", "-f", "--tail=1", "single")
		cmd.Env = append(os.Environ(), "HOME="+s.Dir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(out)
		expectLine(t, br, "five\n")
		app.append(t, "six\n")
		expectLine(t, br, "six\n")
		app.running.Store(false)
		rest, _ := io.ReadAll(br)
		if err := cmd.Wait(); err != nil || len(rest) != 0 {
			t.Fatalf("kubectl logs -f after the container stopped: %q, %v; stderr: %s", rest, err, stderr.String())
		}
	})
}

func readLogs(ctx context.Context, t *testing.T, cs kubernetes.Interface, pod string, opts *corev1.PodLogOptions) string {
	t.Helper()
	rc, err := cs.CoreV1().Pods("default").GetLogs(pod, opts).Stream(ctx)
	if err != nil {
		t.Fatalf("logs of %s: %v", pod, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading logs of %s: %v", pod, err)
	}
	return string(b)
}

func expectLine(t *testing.T, br *bufio.Reader, want string) {
	t.Helper()
	got, err := br.ReadString('\n')
	if err != nil || got != want {
		t.Fatalf("read %q, %v; want %q", got, err, want)
	}
}

package apiserver_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	criremote "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/kubebus/kubebus/apiserver"
	kserver "github.com/kubebus/kubebus/kubelet/server"
	"github.com/kubebus/kubebus/test/harness"
)

// fakeStreams is a kubelet runtime whose commands are made up: "echo"
// copies stdin to stdout, "exit N" exits N after printing the container's
// name to stdout and "err" to stderr. Port-forward says which port and
// then echoes.
type fakeStreams struct{}

func (fakeStreams) Exec(_ context.Context, ns, pod, container string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, _ bool, _ <-chan criremote.TerminalSize) (int, error) {
	if ns != "default" || pod != "p" {
		return 0, kserver.PodNotFound(ns, pod)
	}
	switch cmd[0] {
	case "echo":
		_, err := io.Copy(stdout, stdin)
		return 0, err
	case "exit":
		code, _ := strconv.Atoi(cmd[1])
		fmt.Fprintf(stdout, "%s\n", container)
		if stderr != nil {
			fmt.Fprintf(stderr, "err\n")
		}
		return code, nil
	}
	return 127, nil
}

func (fakeStreams) Attach(_ context.Context, _, _, container string, _ io.Reader, stdout, _ io.WriteCloser, _ bool, _ <-chan criremote.TerminalSize) error {
	_, err := fmt.Fprintf(stdout, "attached to %s\n", container)
	return err
}

func (fakeStreams) PortForward(_ context.Context, _, _ string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	fmt.Fprintf(stream, "port %d\n", port)
	_, err := io.Copy(stream, stream)
	return err
}

// TestIntegrationPodExec runs `kubebus server` and a kubelet server on
// 127.0.0.1 with a made-up runtime, and drives pods/exec, pods/attach and
// pods/portforward through client-go over SPDY and over WebSocket (the v5
// channel protocol, translated to SPDY toward the kubelet; SPDY tunnelled
// in WebSocket for port-forward).
func TestIntegrationPodExec(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "")
	cs := s.Clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const nodeName = "exec-node"
	pkiDir := filepath.Join(s.Dir, "pki")
	cert, err := kserver.IssueServingCert(kserver.CertConfig{CAFile: filepath.Join(pkiDir, "ca.crt"), CAKeyFile: filepath.Join(pkiDir, "ca.key"),
		NodeName: nodeName, Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	kubelet, err := kserver.New(kserver.Config{Certificate: &cert, ClientCAFile: filepath.Join(pkiDir, "ca.crt"),
		Logs: logLocator{}, Streams: fakeStreams{}, Logger: slog.New(slog.DiscardHandler),
		Authorize: func(user string, _ []string) error {
			if user != apiserver.KubeletClientUser {
				return fmt.Errorf("user %q may not use the kubelet", user)
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
	registerNode(ctx, t, cs, nodeName, ln.Addr().(*net.TCPAddr).Port)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{NodeName: nodeName, SchedulerName: "kubebus-test-no-scheduler",
			Containers: []corev1.Container{{Name: "a", Image: "registry.example/app:1"}, {Name: "b", Image: "registry.example/app:1"}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := s.RESTConfig(t)

	executors := map[string]func(t *testing.T, u string) remotecommand.Executor{
		"spdy": func(t *testing.T, u string) remotecommand.Executor {
			e, err := remotecommand.NewSPDYExecutor(cfg, http.MethodPost, mustURL(t, u))
			if err != nil {
				t.Fatal(err)
			}
			return e
		},
		"websocket": func(t *testing.T, u string) remotecommand.Executor {
			e, err := remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, u)
			if err != nil {
				t.Fatal(err)
			}
			return e
		},
	}
	for name, newExec := range executors {
		t.Run(name, func(t *testing.T) {
			execURL := func(container string, stdin bool, cmd ...string) string {
				return cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("p").SubResource("exec").
					VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdin: stdin, Stdout: true, Stderr: true}, scheme.ParameterCodec).URL().String()
			}
			// An exit code comes back as an ExitError, with the output.
			var out, errb bytes.Buffer
			err := newExec(t, execURL("b", false, "exit", "3")).StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errb})
			if ee, ok := err.(utilexec.ExitError); !ok || ee.ExitStatus() != 3 {
				t.Fatalf("exit 3: err %v (%T)", err, err)
			}
			if out.String() != "b\n" || errb.String() != "err\n" {
				t.Fatalf("exit 3: stdout %q stderr %q", out.String(), errb.String())
			}
			// Stdin reaches the command, which sees its end.
			in := strings.Repeat("x", 200<<10)
			out.Reset()
			if err := newExec(t, execURL("a", true, "echo")).StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader(in), Stdout: &out, Stderr: &errb}); err != nil {
				t.Fatal(err)
			}
			if out.String() != in {
				t.Fatalf("echo returned %d bytes, want %d", out.Len(), len(in))
			}
			// Attach.
			out.Reset()
			au := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("p").SubResource("attach").
				VersionedParams(&corev1.PodAttachOptions{Container: "a", Stdout: true}, scheme.ParameterCodec).URL().String()
			if err := newExec(t, au).StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out}); err != nil {
				t.Fatal(err)
			}
			if out.String() != "attached to a\n" {
				t.Fatalf("attach printed %q", out.String())
			}
		})
	}

	pfURL := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("p").SubResource("portforward").URL()
	dialers := map[string]func(t *testing.T) httpstream.Dialer{
		"spdy": func(t *testing.T) httpstream.Dialer {
			rt, upgrader, err := spdy.RoundTripperFor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, pfURL)
		},
		"websocket": func(t *testing.T) httpstream.Dialer {
			d, err := portforward.NewSPDYOverWebsocketDialer(pfURL, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
	}
	for name, newDialer := range dialers {
		t.Run("portforward "+name, func(t *testing.T) {
			stop, ready := make(chan struct{}), make(chan struct{})
			fw, err := portforward.NewOnAddresses(newDialer(t), []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- fw.ForwardPorts() }()
			defer func() { close(stop); <-done }()
			select {
			case <-ready:
			case err := <-done:
				t.Fatalf("port-forward ended: %v", err)
			case <-time.After(30 * time.Second):
				t.Fatal("port-forward not ready")
			}
			ports, err := fw.GetPorts()
			if err != nil {
				t.Fatal(err)
			}
			c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local))))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(20 * time.Second))
			r := bufio.NewReader(c)
			if line, err := r.ReadString('\n'); err != nil || line != "port 8080\n" {
				t.Fatalf("first line %q, %v", line, err)
			}
			if _, err := c.Write([]byte("ping\n")); err != nil {
				t.Fatal(err)
			}
			if line, err := r.ReadString('\n'); err != nil || line != "ping\n" {
				t.Fatalf("echo %q, %v", line, err)
			}
		})
	}

	// Authorization as upstream: POST (SPDY) needs create on pods/exec; a
	// GET upgrade (WebSocket) needs get and create.
	execURL := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("p").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "a", Command: []string{"exit", "0"}, Stdout: true}, scheme.ParameterCodec).URL().String()
	for user, verbs := range map[string][]string{"exec-create": {"create"}, "exec-get": {"get"}, "exec-both": {"get", "create"}} {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: verbs}}}
		if _, err := cs.RbacV1().Roles("default").Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
		if _, err := cs.RbacV1().RoleBindings("default").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		user      string
		websocket bool
		allowed   bool
		missing   string // the verb the refusal names
	}{
		{"exec-create", false, true, ""}, {"exec-create", true, false, "get"},
		{"exec-get", false, false, "create"}, {"exec-get", true, false, "create"},
		{"exec-both", false, true, ""}, {"exec-both", true, true, ""},
	} {
		ucfg := userConfig(t, s, tc.user)
		var e remotecommand.Executor
		if tc.websocket {
			e, err = remotecommand.NewWebSocketExecutor(ucfg, http.MethodGet, execURL)
		} else {
			e, err = remotecommand.NewSPDYExecutor(ucfg, http.MethodPost, mustURL(t, execURL))
		}
		if err != nil {
			t.Fatal(err)
		}
		// RBAC caches may take a moment to see the new bindings.
		harness.Eventually(t, 10*time.Second, func() error {
			err := e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard})
			if tc.allowed && err != nil {
				return fmt.Errorf("%s (websocket %v): %v, want allowed", tc.user, tc.websocket, err)
			}
			return nil
		})
		if !tc.allowed {
			err := e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard})
			if want := fmt.Sprintf("User %q cannot %s resource \"pods/exec\"", tc.user, tc.missing); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s (websocket %v): %v, want %q", tc.user, tc.websocket, err, want)
			}
		}
	}

	// A node's own credentials cannot exec, even into its own pods.
	nodeCfg, err := clientcmd.BuildConfigFromFlags("", harness.NodeKubeconfig(t, s, nodeName))
	if err != nil {
		t.Fatal(err)
	}
	e, err := remotecommand.NewSPDYExecutor(nodeCfg, http.MethodPost, mustURL(t, cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("p").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "a", Command: []string{"exit", "0"}, Stdout: true}, scheme.ParameterCodec).URL().String()))
	if err != nil {
		t.Fatal(err)
	}
	err = e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard})
	if want := `User "system:node:` + nodeName + `" cannot create resource "pods/exec"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("exec as node %s: %v, want %q", nodeName, err, want)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// userConfig is a client configuration for the server that authenticates
// as user with a client certificate from the server's CA.
func userConfig(t *testing.T, s *harness.Server, user string) *rest.Config {
	t.Helper()
	out := filepath.Join(t.TempDir(), "kubeconfig-"+user)
	cmd := exec.Command(harness.Binary(t), "certs", "kubeconfig", "--pki-dir", filepath.Join(s.Dir, "pki"), "--user", user, "--server", s.URL, "--out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubebus certs kubeconfig: %v\n%s", err, b)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", out)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// registerNode creates a Node whose kubelet listens on 127.0.0.1:port.
func registerNode(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string, port int) {
	t.Helper()
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

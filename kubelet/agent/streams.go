package agent

import (
	"context"
	"fmt"
	"io"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"

	"github.com/kubebus/kubebus/kubelet/runtime"
	"github.com/kubebus/kubebus/kubelet/server"
)

var _ server.StreamRuntime = (*Kubelet)(nil)

// StreamingRuntime is what a Runtime must also do for the kubelet to serve
// exec, attach and port-forward; runtime/containerd does it.
type StreamingRuntime interface {
	Exec(ctx context.Context, id string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) (int, error)
	// Attach streams the container's output to out and stdin (nil: none)
	// to its stdin; stdinOnce closes the container's stdin when stdin
	// ends. resize (nil: none) resizes its terminal.
	Attach(ctx context.Context, id string, stdin io.Reader, out io.Writer, resize <-chan remotecommand.TerminalSize, stdinOnce bool) error
	// PortForward connects stream to TCP port on the loopback address of
	// the network namespace at netnsPath ("": the kubelet's own).
	PortForward(ctx context.Context, netnsPath string, port int32, stream io.ReadWriteCloser) error
}

// Exec runs cmd in a running container of a pod of this node.
func (k *Kubelet) Exec(ctx context.Context, namespace, pod, container string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) (int, error) {
	srt, ok := k.rt.(StreamingRuntime)
	if !ok {
		return 0, &server.Error{Code: http.StatusNotImplemented, Message: "the container runtime of this node does not support exec"}
	}
	c, err := k.runningContainer(ctx, namespace, pod, container)
	if err != nil {
		return 0, err
	}
	return srt.Exec(ctx, c.ID, cmd, stdin, stdout, stderr, tty, resize)
}

// Attach attaches to a running container of a pod of this node: its
// output to stdout (or stderr), stdin to its stdin when its spec asks for
// one, resize to its terminal. With the spec's stdinOnce, the container's
// stdin is closed when this attach's stdin ends.
func (k *Kubelet) Attach(ctx context.Context, namespace, pod, container string, stdin io.Reader, stdout, stderr io.WriteCloser, _ bool, resize <-chan remotecommand.TerminalSize) error {
	srt, ok := k.rt.(StreamingRuntime)
	if !ok {
		return &server.Error{Code: http.StatusNotImplemented, Message: "the container runtime of this node does not support attach"}
	}
	c, err := k.runningContainer(ctx, namespace, pod, container)
	if err != nil {
		return err
	}
	out := io.Writer(stdout)
	if out == nil {
		out = stderr
	}
	if out == nil {
		out = io.Discard
	}
	return srt.Attach(ctx, c.ID, stdin, out, resize, k.stdinOnce(namespace, pod, container))
}

// PortForward connects stream to port in the network namespace of a pod
// of this node.
func (k *Kubelet) PortForward(ctx context.Context, namespace, pod string, port int32, stream io.ReadWriteCloser) error {
	srt, ok := k.rt.(StreamingRuntime)
	if !ok {
		stream.Close()
		return &server.Error{Code: http.StatusNotImplemented, Message: "this node does not support port-forward"}
	}
	p := k.podByName(namespace, pod)
	if p == nil {
		stream.Close()
		return server.PodNotFound(namespace, pod)
	}
	sbs, _, err := k.podRuntime(ctx, p.UID)
	if err != nil {
		stream.Close()
		return err
	}
	for _, sb := range sbs {
		if sb.State == runtime.SandboxReady {
			return srt.PortForward(ctx, sb.NetNSPath, port, stream)
		}
	}
	stream.Close()
	return fmt.Errorf("pod %q in namespace %q has no running sandbox", pod, namespace)
}

// podByName returns the desired pod namespace/name, or nil.
func (k *Kubelet) podByName(namespace, name string) *corev1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.pods {
		if p.Namespace == namespace && p.Name == name {
			return p
		}
	}
	return nil
}

// stdinOnce reports whether the spec of a pod's container sets stdinOnce.
func (k *Kubelet) stdinOnce(namespace, pod, container string) bool {
	p := k.podByName(namespace, pod)
	if p == nil {
		return false
	}
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			return c.StdinOnce
		}
	}
	return false
}

// runningContainer finds the running instance of a pod's container.
func (k *Kubelet) runningContainer(ctx context.Context, namespace, pod, container string) (runtime.Container, error) {
	p := k.podByName(namespace, pod)
	if p == nil {
		return runtime.Container{}, server.PodNotFound(namespace, pod)
	}
	_, cs, err := k.podRuntime(ctx, p.UID)
	if err != nil {
		return runtime.Container{}, err
	}
	for _, c := range cs {
		if c.Name == container && c.State == runtime.ContainerRunning {
			return c, nil
		}
	}
	return runtime.Container{}, &server.Error{Code: http.StatusBadRequest,
		Message: fmt.Sprintf("container %q in pod %q is not running", container, pod)}
}

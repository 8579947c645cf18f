package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// Stream timeouts, the upstream kubelet's defaults.
const (
	// StreamIdleTimeout ends an exec, attach or port-forward connection
	// that carried nothing for this long.
	StreamIdleTimeout = 4 * time.Hour
	// StreamCreationTimeout bounds the wait for a client's streams.
	StreamCreationTimeout = remotecommand.DefaultStreamCreationTimeout
)

// ErrStreamingUnsupported is what a Config without Streams answers exec,
// attach and port-forward with (hollow nodes run no containers).
var ErrStreamingUnsupported = errors.New("this node runs no containers: exec, attach and port-forward are not supported")

// StreamRuntime runs what kubectl exec, attach and port-forward ask of
// the kubelet. The kubelet's pod manager implements it. Errors that are an
// *Error (PodNotFound, ContainerNotFound...) are reported to the client
// with their message.
type StreamRuntime interface {
	// Exec runs cmd in the container, copying stdin (nil: none) to it and
	// its output to stdout and stderr (nil: none), with a terminal resized
	// from resize when tty. It returns the command's exit code.
	Exec(ctx context.Context, namespace, pod, container string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) (int, error)
	// Attach copies the running container's output to stdout and stderr
	// (and stdin to it, where the container has one) until it stops or
	// ctx ends.
	Attach(ctx context.Context, namespace, pod, container string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error
	// PortForward connects stream to TCP port in the pod's network
	// namespace until either ends; it closes stream.
	PortForward(ctx context.Context, namespace, pod string, port int32, stream io.ReadWriteCloser) error
}

// routeStreams adds the upstream kubelet's streaming endpoints to mux:
// /exec, /attach (each also with the pod's UID before the container) and
// /portForward (also with the UID), for GET and POST, as the API server
// proxies pods/exec, pods/attach and pods/portforward to them.
func (s *Server) routeStreams(mux *http.ServeMux) {
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		mux.Handle(m+" /exec/{namespace}/{pod}/{container}", s.authorize(http.HandlerFunc(s.serveExec)))
		mux.Handle(m+" /exec/{namespace}/{pod}/{uid}/{container}", s.authorize(http.HandlerFunc(s.serveExec)))
		mux.Handle(m+" /attach/{namespace}/{pod}/{container}", s.authorize(http.HandlerFunc(s.serveAttach)))
		mux.Handle(m+" /attach/{namespace}/{pod}/{uid}/{container}", s.authorize(http.HandlerFunc(s.serveAttach)))
		mux.Handle(m+" /portForward/{namespace}/{pod}", s.authorize(http.HandlerFunc(s.servePortForward)))
		mux.Handle(m+" /portForward/{namespace}/{pod}/{uid}", s.authorize(http.HandlerFunc(s.servePortForward)))
	}
}

// serveExec answers /exec/{namespace}/{pod}/{container}?command=...
func (s *Server) serveExec(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Streams == nil {
		writeError(w, http.StatusNotImplemented, ErrStreamingUnsupported.Error())
		return
	}
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	cmd := r.URL.Query()["command"]
	if len(cmd) == 0 {
		writeError(w, http.StatusBadRequest, "you must specify at least 1 command")
		return
	}
	ns, pod, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	s.cfg.Logger.DebugContext(r.Context(), "exec", "namespace", ns, "pod", pod, "container", container, "tty", opts.TTY, "stdin", opts.Stdin)
	remotecommand.ServeExec(w, r, &streamAdapter{rt: s.cfg.Streams, namespace: ns}, pod, r.PathValue("uid"), container, cmd,
		opts, StreamIdleTimeout, StreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

// serveAttach answers /attach/{namespace}/{pod}/{container}.
func (s *Server) serveAttach(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Streams == nil {
		writeError(w, http.StatusNotImplemented, ErrStreamingUnsupported.Error())
		return
	}
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ns, pod, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	remotecommand.ServeAttach(w, r, &streamAdapter{rt: s.cfg.Streams, namespace: ns}, pod, r.PathValue("uid"), container,
		opts, StreamIdleTimeout, StreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

// servePortForward answers /portForward/{namespace}/{pod}.
func (s *Server) servePortForward(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Streams == nil {
		writeError(w, http.StatusNotImplemented, ErrStreamingUnsupported.Error())
		return
	}
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ns, pod := r.PathValue("namespace"), r.PathValue("pod")
	portforward.ServePortForward(w, r, &streamAdapter{rt: s.cfg.Streams, namespace: ns}, pod, r.PathValue("uid"),
		opts, StreamIdleTimeout, StreamCreationTimeout, portforward.SupportedProtocols)
}

// streamAdapter lets a StreamRuntime serve the streaming library's
// Executor, Attacher and PortForwarder, which name pods without their
// namespace.
type streamAdapter struct {
	rt        StreamRuntime
	namespace string
}

// ExecInContainer reports a non-zero exit code as the exec.ExitError
// ServeExec turns into the client's exit code.
func (a *streamAdapter) ExecInContainer(ctx context.Context, pod, _, container string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	code, err := a.rt.Exec(ctx, a.namespace, pod, container, cmd, in, out, errw, tty, resize)
	if err != nil {
		return streamError(err)
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: code}
	}
	return nil
}

func (a *streamAdapter) AttachContainer(ctx context.Context, pod, _, container string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	return streamError(a.rt.Attach(ctx, a.namespace, pod, container, in, out, errw, tty, resize))
}

func (a *streamAdapter) PortForward(ctx context.Context, pod, _ string, port int32, stream io.ReadWriteCloser) error {
	return streamError(a.rt.PortForward(ctx, a.namespace, pod, port, stream))
}

// streamError keeps an *Error's message alone, which the client shows.
func streamError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return errors.New(e.Message)
	}
	return err
}

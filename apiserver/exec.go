package apiserver

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/proxy"
	translator "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/resource"
)

// isStreamSubresource reports the pods' streaming subresources, which are
// proxied to the kubelet: exec, attach and portforward.
func isStreamSubresource(sub string) bool {
	switch resource.Subresource(sub) {
	case resource.Exec, resource.Attach, resource.PortForward:
		return true
	}
	return false
}

// streamOptions is what a pods/exec or pods/attach request asks for
// (PodExecOptions, PodAttachOptions), or the ports of a pods/portforward.
type streamOptions struct {
	Container                  string
	Command                    []string
	Stdin, Stdout, Stderr, TTY bool
	Ports                      []int32
	sub                        resource.Subresource
}

// parseStreamOptions reads and validates the query of a streaming
// request as upstream's PodExecOptions, PodAttachOptions and
// PodPortForwardOptions are validated.
func parseStreamOptions(sub resource.Subresource, q url.Values) (*streamOptions, error) {
	o := &streamOptions{sub: sub, Container: q.Get("container"), Command: q["command"],
		Stdin: queryBool(q, "stdin"), Stdout: queryBool(q, "stdout"), Stderr: queryBool(q, "stderr"), TTY: queryBool(q, "tty")}
	switch sub {
	case resource.PortForward:
		for _, v := range q["ports"] {
			p, err := strconv.ParseUint(v, 10, 16)
			if err != nil || p == 0 {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid port %q", v))
			}
			o.Ports = append(o.Ports, int32(p))
		}
		return o, nil
	case resource.Exec:
		if len(o.Command) == 0 {
			return nil, apierrors.NewBadRequest("you must specify at least 1 command")
		}
	}
	if !o.Stdin && !o.Stdout && !o.Stderr {
		return nil, apierrors.NewBadRequest("you must specify at least 1 of stdin, stdout, stderr")
	}
	if o.TTY && o.Stderr {
		// Upstream's validation: a terminal merges stderr into stdout.
		o.Stderr = false
	}
	return o, nil
}

// kubeletStreamURL is the kubelet's URL for the request: /exec, /attach
// or /portForward, with the query the kubelet's streaming server reads.
func kubeletStreamURL(hostPort, namespace, pod string, o *streamOptions) *url.URL {
	q := url.Values{}
	var path, raw string
	switch o.sub {
	case resource.PortForward:
		for _, p := range o.Ports {
			q.Add("port", strconv.Itoa(int(p)))
		}
		path = "/portForward/" + namespace + "/" + pod
		raw = "/portForward/" + url.PathEscape(namespace) + "/" + url.PathEscape(pod)
	default:
		for _, c := range o.Command {
			q.Add("command", c)
		}
		for name, on := range map[string]bool{"input": o.Stdin, "output": o.Stdout, "error": o.Stderr, "tty": o.TTY} {
			if on {
				q.Set(name, "1")
			}
		}
		path = "/" + string(o.sub) + "/" + namespace + "/" + pod + "/" + o.Container
		raw = "/" + string(o.sub) + "/" + url.PathEscape(namespace) + "/" + url.PathEscape(pod) + "/" + url.PathEscape(o.Container)
	}
	return &url.URL{Scheme: "https", Host: hostPort, Path: path, RawPath: raw, RawQuery: q.Encode()}
}

// podStream serves pods/<name>/exec, attach and portforward (GET and
// POST) as upstream does: the request's SPDY or WebSocket upgrade is
// proxied to the kubelet of the pod's node; a WebSocket exec or attach
// with the v5 channel protocol is translated to SPDY toward the kubelet,
// and a port-forward with SPDY tunnelled in WebSocket is unwrapped.
func (s *Server) podStream(w http.ResponseWriter, r *http.Request, ri RequestInfo, res *resource.Resource) error {
	if ri.Verb == "get" {
		// A GET upgrade also needs create, as upstream since 1.30
		// (AuthorizePodWebsocketUpgradeCreatePermission).
		a := auth.Attributes{User: auth.UserFrom(r.Context()), Verb: "create", ResourceRequest: true, APIGroup: ri.Group, APIVersion: ri.Version,
			Resource: ri.Resource, Subresource: ri.Subresource, Namespace: ri.Namespace, Name: ri.Name}
		if !s.authorized(w, r, a) {
			return nil
		}
	}
	sub := resource.Subresource(ri.Subresource)
	opts, err := parseStreamOptions(sub, r.URL.Query())
	if err != nil {
		return err
	}
	obj, _, err := s.getObject(r.Context(), res, ri.Namespace, ri.Name)
	if err != nil {
		return err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("pods/%s: stored object is a %T", sub, obj))
	}
	if sub != resource.PortForward {
		if opts.Container, err = logContainer(pod, opts.Container); err != nil {
			return err
		}
	}
	hostPort, err := s.podKubelet(r.Context(), pod, string(sub))
	if err != nil {
		return err
	}
	loc := kubeletStreamURL(hostPort, pod.Namespace, pod.Name, opts)
	transport := s.kubelet.Transport
	upgrade := proxy.NewUpgradeAwareHandler(loc, transport, false, true, &streamErrorResponder{s: s})
	var h http.Handler = upgrade
	switch {
	case sub == resource.PortForward && wsstream.IsWebSocketRequestWithTunnelingProtocol(r):
		h = translator.NewTunnelingHandler(upgrade)
	case sub != resource.PortForward && wsstream.IsWebSocketRequestWithStreamCloseProtocol(r):
		h = translator.NewStreamTranslatorHandler(loc, transport, 0, translator.Options{
			Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr, Tty: opts.TTY})
	}
	s.log.DebugContext(r.Context(), "proxying a stream to the kubelet", "subresource", sub, "pod", pod.Namespace+"/"+pod.Name, "node", pod.Spec.NodeName)
	h.ServeHTTP(w, r)
	return nil
}

// streamErrorResponder answers a failed proxy with a Status.
type streamErrorResponder struct{ s *Server }

func (e *streamErrorResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		err = apierrors.NewInternalError(fmt.Errorf("proxying to the kubelet: %w", err))
	}
	e.s.writeError(w, r, err)
}

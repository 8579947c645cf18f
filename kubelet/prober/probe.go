// Package prober runs the kubelet's container probes (exec, httpGet,
// tcpSocket and grpc) and keeps their results: a Manager runs one worker
// per container and probe kind, honouring the probe's timing and
// thresholds and upstream's gating (nothing but the startup probe runs
// before it succeeds), and tells the kubelet when a result changes. The
// same Prober runs lifecycle hooks (RunHandler).
package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// Result is the outcome of a probe.
type Result int8

// Probe results. Unknown is "no result yet". The values match those of
// pods.ProbeResult, so the kubelet converts with pods.ProbeResult(r).
const (
	Unknown Result = iota
	Success
	Failure
)

func (r Result) String() string {
	switch r {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	default:
		return "Unknown"
	}
}

// Execer runs a command in a container and waits for it, at most timeout
// (0: no limit but ctx). A command that runs out of time must be reported
// with an error for which errors.Is(err, context.DeadlineExceeded) is
// true.
type Execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (runtime.ExecResult, error)
}

// ErrUnsupported is returned for probe or handler types this prober does
// not run.
var ErrUnsupported = errors.New("prober: unsupported handler type")

// DefaultUserAgent is the User-Agent of HTTP probes, as upstream's
// kube-probe/<major>.<minor>.
const DefaultUserAgent = "kube-probe/1.37"

// maxBody is how much of an HTTP response is kept for the message.
const maxBody = 10 << 10

// Target is what a probe or handler runs against.
type Target struct {
	Pod         *corev1.Pod
	Container   *corev1.Container
	ContainerID string
	// PodIP is the default host of httpGet, tcpSocket and grpc.
	PodIP string
}

// Prober runs single probes. Its zero value is not usable; use NewProber.
type Prober struct {
	exec      Execer
	userAgent string
	transport *http.Transport
	dial      DialFunc
}

// DialFunc opens a connection, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// WithDialer makes httpGet, tcpSocket and grpc probes connect through dial,
// e.g. from the network namespace the pods are attached in. Call it before
// the prober is used.
func (p *Prober) WithDialer(dial DialFunc) *Prober {
	p.dial = dial
	p.transport.DialContext = dial
	return p
}

// NewProber returns a Prober that runs exec probes through exec (nil:
// exec probes fail with an error).
func NewProber(exec Execer) *Prober {
	return &Prober{
		exec:      exec,
		userAgent: DefaultUserAgent,
		transport: &http.Transport{
			// Probes check the container, not a proxy; and, as upstream,
			// they do not verify certificates nor keep connections.
			Proxy:             nil,
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // upstream probes skip verification
			DisableKeepAlives: true,
		},
	}
}

// timeout is the probe's timeoutSeconds (default 1).
func timeout(p *corev1.Probe) time.Duration {
	if p.TimeoutSeconds <= 0 {
		return time.Second
	}
	return time.Duration(p.TimeoutSeconds) * time.Second
}

// Probe runs probe against t once and returns its result and a message
// (the output, or why it failed). An error means the probe could not be
// run at all (bad spec, runtime error); the caller discards its result.
func (p *Prober) Probe(ctx context.Context, probe *corev1.Probe, t Target) (Result, string, error) {
	if probe == nil {
		return Unknown, "", errors.New("prober: nil probe")
	}
	to := timeout(probe)
	h := &probe.ProbeHandler
	switch {
	case h.Exec != nil:
		return p.probeExec(ctx, h.Exec.Command, t, to)
	case h.HTTPGet != nil:
		return p.probeHTTP(ctx, h.HTTPGet, t, to)
	case h.TCPSocket != nil:
		port, err := resolvePort(h.TCPSocket.Port, t.Container)
		if err != nil {
			return Unknown, "", err
		}
		host, err := hostOf(h.TCPSocket.Host, t)
		if err != nil {
			return Unknown, "", err
		}
		return p.probeTCP(ctx, net.JoinHostPort(host, strconv.Itoa(port)), to)
	case h.GRPC != nil:
		return p.probeGRPC(ctx, h.GRPC, t, to)
	}
	return Unknown, "", fmt.Errorf("%w: probe has no handler", ErrUnsupported)
}

func (p *Prober) probeExec(ctx context.Context, cmd []string, t Target, to time.Duration) (Result, string, error) {
	if p.exec == nil {
		return Unknown, "", errors.New("prober: no execer configured for exec probes")
	}
	if len(cmd) == 0 {
		return Unknown, "", errors.New("prober: exec probe without a command")
	}
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	res, err := p.exec.ExecSync(ctx, t.ContainerID, cmd, to)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return Failure, fmt.Sprintf("command %q timed out", strings.Join(cmd, " ")), nil
	case err != nil:
		return Unknown, "", fmt.Errorf("exec probe in container %s: %w", t.ContainerID, err)
	}
	out := string(res.Stdout) + string(res.Stderr)
	if res.ExitCode != 0 {
		return Failure, out, nil
	}
	return Success, out, nil
}

func (p *Prober) probeHTTP(ctx context.Context, g *corev1.HTTPGetAction, t Target, to time.Duration) (Result, string, error) {
	req, err := p.httpRequest(ctx, g, t)
	if err != nil {
		return Unknown, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	code, body, err := p.do(req.WithContext(ctx))
	if err != nil {
		return Failure, err.Error(), nil
	}
	if code >= 200 && code < 400 {
		return Success, body, nil
	}
	return Failure, fmt.Sprintf("HTTP probe failed with statuscode: %d", code), nil
}

// httpRequest builds the GET of an httpGet action.
func (p *Prober) httpRequest(ctx context.Context, g *corev1.HTTPGetAction, t Target) (*http.Request, error) {
	port, err := resolvePort(g.Port, t.Container)
	if err != nil {
		return nil, err
	}
	host, err := hostOf(g.Host, t)
	if err != nil {
		return nil, err
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	if scheme != "http" && scheme != "https" {
		return nil, fmt.Errorf("prober: unsupported scheme %q", g.Scheme)
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse(scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) + path)
	if err != nil {
		return nil, fmt.Errorf("prober: bad httpGet URL: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", p.userAgent)
	req.Header.Set("Accept", "*/*")
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	// Headers given in the probe replace the defaults.
	for _, def := range []string{"User-Agent", "Accept"} {
		if vs := headerValues(g.HTTPHeaders, def); vs != nil {
			req.Header[def] = vs
		}
	}
	return req, nil
}

func headerValues(hs []corev1.HTTPHeader, name string) []string {
	var vs []string
	for _, h := range hs {
		if http.CanonicalHeaderKey(h.Name) == name {
			vs = append(vs, h.Value)
		}
	}
	return vs
}

// do sends req, following redirects to the same host only (a redirect
// elsewhere counts as the 3xx itself, a success, as upstream), and returns
// the status and the start of the body.
func (p *Prober) do(req *http.Request) (int, string, error) {
	client := &http.Client{
		Transport: p.transport,
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			if r.URL.Hostname() != via[0].URL.Hostname() {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return 0, "", err
	}
	return resp.StatusCode, string(b), nil
}

func (p *Prober) probeTCP(ctx context.Context, addr string, to time.Duration) (Result, string, error) {
	dial := p.dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return Failure, err.Error(), nil
	}
	conn.Close()
	return Success, "", nil
}

func (p *Prober) probeGRPC(ctx context.Context, g *corev1.GRPCAction, t Target, to time.Duration) (Result, string, error) {
	host, err := hostOf("", t)
	if err != nil {
		return Unknown, "", err
	}
	if g.Port <= 0 || g.Port > 65535 {
		return Unknown, "", fmt.Errorf("prober: invalid grpc port %d", g.Port)
	}
	addr := net.JoinHostPort(host, strconv.Itoa(int(g.Port)))
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUserAgent(DefaultUserAgent)}
	if p.dial != nil {
		opts = append(opts, grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return p.dial(ctx, "tcp", addr) }))
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return Unknown, "", fmt.Errorf("prober: grpc client for %s: %w", addr, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	service := ""
	if g.Service != nil {
		service = *g.Service
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		switch status.Code(err) {
		case codes.Unimplemented:
			return Failure, "this server does not implement the grpc health protocol (grpc.health.v1.Health)", nil
		case codes.DeadlineExceeded:
			return Failure, fmt.Sprintf("timeout: health rpc did not complete within %s", to), nil
		}
		return Failure, fmt.Sprintf("error: health rpc failed: %v", err), nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return Failure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String()), nil
	}
	return Success, "", nil
}

// hostOf returns host, or the pod's IP when it is empty.
func hostOf(host string, t Target) (string, error) {
	if host != "" {
		return host, nil
	}
	if t.PodIP != "" {
		return t.PodIP, nil
	}
	if t.Pod != nil && t.Pod.Status.PodIP != "" {
		return t.Pod.Status.PodIP, nil
	}
	return "", errors.New("prober: no host and no pod IP")
}

// resolvePort returns a port number, looking a name up in the container's
// ports.
func resolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		if p.IntVal <= 0 || p.IntVal > 65535 {
			return 0, fmt.Errorf("prober: invalid port %d", p.IntVal)
		}
		return int(p.IntVal), nil
	}
	if c != nil {
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				return int(cp.ContainerPort), nil
			}
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil && n > 0 && n <= 65535 {
		return n, nil
	}
	return 0, fmt.Errorf("prober: couldn't find port %q in the container", p.StrVal)
}

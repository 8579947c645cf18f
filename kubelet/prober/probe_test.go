package prober

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubebus/kubebus/kubelet/pods"
	"github.com/kubebus/kubebus/kubelet/runtime"
)

// scriptedExecer answers every ExecSync from a function.
type scriptedExecer struct {
	fn func(ctx context.Context, id string, cmd []string, timeout time.Duration) (runtime.ExecResult, error)
}

func (s scriptedExecer) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (runtime.ExecResult, error) {
	return s.fn(ctx, id, cmd, timeout)
}

func serverPort(t *testing.T, rawURL string) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// closedPort returns a port on 127.0.0.1 nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func httpProbe(port intstr.IntOrString, path string, headers ...corev1.HTTPHeader) *corev1.Probe {
	return &corev1.Probe{TimeoutSeconds: 5, ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: port, Path: path, HTTPHeaders: headers}}}
}

func TestProbeHTTP(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "fine") })
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	mux.HandleFunc("/local-redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/fail", http.StatusFound) })
	mux.HandleFunc("/remote-redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://elsewhere.invalid/", http.StatusFound)
	})
	mux.HandleFunc("/headers", func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "vhost.example" || r.Header.Get("X-Token") != "abc" || r.UserAgent() != "custom-agent" || r.Header.Get("Accept") != "*/*" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "host=%s token=%s ua=%s", r.Host, r.Header.Get("X-Token"), r.UserAgent())
		}
	})
	mux.HandleFunc("/agent", func(w http.ResponseWriter, r *http.Request) {
		if r.UserAgent() != DefaultUserAgent {
			w.WriteHeader(http.StatusBadRequest)
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	// Subtests run in parallel after this function returns: close at cleanup.
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	tlsSrv := httptest.NewTLSServer(mux)
	t.Cleanup(tlsSrv.Close)
	port := serverPort(t, srv.URL)
	container := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}}

	tests := []struct {
		name    string
		probe   *corev1.Probe
		podIP   string
		want    Result
		wantMsg string
		wantErr bool
	}{
		{name: "200", probe: httpProbe(intstr.FromInt32(int32(port)), "/ok"), want: Success, wantMsg: "fine"},
		{name: "path without slash", probe: httpProbe(intstr.FromInt32(int32(port)), "ok"), want: Success},
		{name: "named port", probe: httpProbe(intstr.FromString("web"), "/ok"), want: Success},
		{name: "500", probe: httpProbe(intstr.FromInt32(int32(port)), "/fail"), want: Failure, wantMsg: "HTTP probe failed with statuscode: 500"},
		{name: "404", probe: httpProbe(intstr.FromInt32(int32(port)), "/missing"), want: Failure, wantMsg: "statuscode: 404"},
		{name: "redirect on the same host is followed", probe: httpProbe(intstr.FromInt32(int32(port)), "/local-redirect"), want: Failure, wantMsg: "statuscode: 500"},
		{name: "redirect elsewhere counts as success", probe: httpProbe(intstr.FromInt32(int32(port)), "/remote-redirect"), want: Success},
		{name: "headers, Host and User-Agent", probe: httpProbe(intstr.FromInt32(int32(port)), "/headers",
			corev1.HTTPHeader{Name: "Host", Value: "vhost.example"}, corev1.HTTPHeader{Name: "X-Token", Value: "abc"},
			corev1.HTTPHeader{Name: "user-agent", Value: "custom-agent"}), want: Success},
		{name: "default user agent", probe: httpProbe(intstr.FromInt32(int32(port)), "/agent"), want: Success},
		{name: "https without verification", probe: func() *corev1.Probe {
			p := httpProbe(intstr.FromInt32(int32(serverPort(t, tlsSrv.URL))), "/ok")
			p.HTTPGet.Scheme = corev1.URISchemeHTTPS
			return p
		}(), want: Success},
		{name: "timeout", probe: func() *corev1.Probe {
			p := httpProbe(intstr.FromInt32(int32(port)), "/slow")
			p.TimeoutSeconds = 1
			return p
		}(), want: Failure, wantMsg: "deadline exceeded"},
		{name: "connection refused", probe: httpProbe(intstr.FromInt32(int32(closedPort(t))), "/"), want: Failure, wantMsg: "refused"},
		{name: "explicit host", probe: func() *corev1.Probe {
			p := httpProbe(intstr.FromInt32(int32(port)), "/ok")
			p.HTTPGet.Host = "127.0.0.1"
			return p
		}(), podIP: "-", want: Success},
		{name: "unknown port name", probe: httpProbe(intstr.FromString("nope"), "/"), wantErr: true},
		{name: "bad port number", probe: httpProbe(intstr.FromInt32(0), "/"), wantErr: true},
		{name: "no pod IP", probe: httpProbe(intstr.FromInt32(int32(port)), "/"), podIP: "-", wantErr: true},
		{name: "bad scheme", probe: func() *corev1.Probe {
			p := httpProbe(intstr.FromInt32(int32(port)), "/ok")
			p.HTTPGet.Scheme = "ftp"
			return p
		}(), wantErr: true},
	}
	p := NewProber(nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ip := "127.0.0.1"
			if tc.podIP == "-" {
				ip = ""
			}
			r, msg, err := p.Probe(context.Background(), tc.probe, Target{Container: container, PodIP: ip})
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error (result %s %q)", r, msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r != tc.want || !strings.Contains(msg, tc.wantMsg) {
				t.Fatalf("result %s %q, want %s containing %q", r, msg, tc.want, tc.wantMsg)
			}
		})
	}
}

func TestProbeTCP(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	open := l.Addr().(*net.TCPAddr).Port
	container := &corev1.Container{Ports: []corev1.ContainerPort{{Name: "db", ContainerPort: int32(open)}}}
	p := NewProber(nil)
	for _, tc := range []struct {
		name string
		port intstr.IntOrString
		want Result
	}{
		{"listening", intstr.FromInt32(int32(open)), Success},
		{"named", intstr.FromString("db"), Success},
		{"closed", intstr.FromInt32(int32(closedPort(t))), Failure},
	} {
		probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: tc.port}}}
		r, msg, err := p.Probe(context.Background(), probe, Target{Container: container, PodIP: "127.0.0.1"})
		if err != nil || r != tc.want {
			t.Errorf("%s: %s %q %v, want %s", tc.name, r, msg, err, tc.want)
		}
	}
}

func TestProbeExec(t *testing.T) {
	t.Parallel()
	boom := errors.New("runtime down")
	ex := scriptedExecer{fn: func(ctx context.Context, id string, cmd []string, to time.Duration) (runtime.ExecResult, error) {
		if id != "c1" {
			return runtime.ExecResult{}, fmt.Errorf("wrong container %q", id)
		}
		if to != 7*time.Second {
			return runtime.ExecResult{}, fmt.Errorf("timeout %v, want the probe's 7s", to)
		}
		if _, ok := ctx.Deadline(); !ok {
			return runtime.ExecResult{}, errors.New("no deadline on the context")
		}
		switch cmd[0] {
		case "ok":
			return runtime.ExecResult{Stdout: []byte("all good")}, nil
		case "fail":
			return runtime.ExecResult{Stdout: []byte("out "), Stderr: []byte("err"), ExitCode: 2}, nil
		case "slow":
			return runtime.ExecResult{}, fmt.Errorf("exec: %w", context.DeadlineExceeded)
		}
		return runtime.ExecResult{}, boom
	}}
	p := NewProber(ex)
	probe := func(cmd ...string) *corev1.Probe {
		return &corev1.Probe{TimeoutSeconds: 7, ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}}
	}
	target := Target{ContainerID: "c1"}
	for _, tc := range []struct {
		cmd     []string
		want    Result
		wantMsg string
		wantErr error
	}{
		{cmd: []string{"ok"}, want: Success, wantMsg: "all good"},
		{cmd: []string{"fail"}, want: Failure, wantMsg: "out err"},
		{cmd: []string{"slow", "arg"}, want: Failure, wantMsg: `command "slow arg" timed out`},
		{cmd: []string{"broken"}, wantErr: boom},
	} {
		r, msg, err := p.Probe(context.Background(), probe(tc.cmd...), target)
		if tc.wantErr != nil {
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("%v: err %v, want %v", tc.cmd, err, tc.wantErr)
			}
			continue
		}
		if err != nil || r != tc.want || msg != tc.wantMsg {
			t.Errorf("%v: %s %q %v, want %s %q", tc.cmd, r, msg, err, tc.want, tc.wantMsg)
		}
	}
	if _, _, err := p.Probe(context.Background(), probe(), target); err == nil {
		t.Error("empty command: no error")
	}
	if _, _, err := NewProber(nil).Probe(context.Background(), probe("ok"), target); err == nil {
		t.Error("no execer: no error")
	}
	if _, _, err := p.Probe(context.Background(), &corev1.Probe{}, target); !errors.Is(err, ErrUnsupported) {
		t.Errorf("no handler: %v, want ErrUnsupported", err)
	}
}

func TestProbeGRPC(t *testing.T) {
	t.Parallel()
	start := func(withHealth bool) (int, *health.Server) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := grpc.NewServer()
		hs := health.NewServer()
		if withHealth {
			healthpb.RegisterHealthServer(s, hs)
		}
		go s.Serve(l)
		t.Cleanup(s.Stop)
		return l.Addr().(*net.TCPAddr).Port, hs
	}
	port, hs := start(true)
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	bare, _ := start(false)
	probe := func(port int, service *string) *corev1.Probe {
		return &corev1.Probe{TimeoutSeconds: 5, ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: int32(port), Service: service}}}
	}
	svc := "db"
	p := NewProber(nil)
	for _, tc := range []struct {
		name    string
		probe   *corev1.Probe
		want    Result
		wantMsg string
	}{
		{"serving", probe(port, nil), Success, ""},
		{"not serving", probe(port, &svc), Failure, "NOT_SERVING"},
		{"no health service", probe(bare, nil), Failure, "does not implement the grpc health protocol"},
		{"nothing listening", probe(closedPort(t), nil), Failure, "health rpc failed"},
	} {
		r, msg, err := p.Probe(context.Background(), tc.probe, Target{PodIP: "127.0.0.1"})
		if err != nil || r != tc.want || !strings.Contains(msg, tc.wantMsg) {
			t.Errorf("%s: %s %q %v, want %s containing %q", tc.name, r, msg, err, tc.want, tc.wantMsg)
		}
	}
}

func TestRunHandler(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	port := intstr.FromInt32(int32(serverPort(t, srv.URL)))
	ex := scriptedExecer{fn: func(ctx context.Context, id string, cmd []string, to time.Duration) (runtime.ExecResult, error) {
		if cmd[0] == "ok" {
			return runtime.ExecResult{}, nil
		}
		return runtime.ExecResult{ExitCode: 1, Stdout: []byte("nope")}, nil
	}}
	p := NewProber(ex)
	target := Target{ContainerID: "c1", PodIP: "127.0.0.1"}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		h       *corev1.LifecycleHandler
		wantErr bool
	}{
		{"exec ok", context.Background(), &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"ok"}}}, false},
		{"exec fails", context.Background(), &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"no"}}}, true},
		{"http ok", context.Background(), &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Port: port, Path: "/"}}, false},
		{"http 503", context.Background(), &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Port: port, Path: "/bad"}}, true},
		{"sleep 0", context.Background(), &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 0}}, false},
		{"sleep cut short", canceled, &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 3600}}, true},
		{"tcpSocket is not a hook", context.Background(), &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Port: port}}, true},
		{"nil", context.Background(), nil, true},
	} {
		if err := p.RunHandler(tc.ctx, tc.h, target); (err != nil) != tc.wantErr {
			t.Errorf("%s: err %v, want error %v", tc.name, err, tc.wantErr)
		}
	}
}

// The kubelet converts results with pods.ProbeResult(r): the values must
// agree.
func TestResultMatchesPods(t *testing.T) {
	t.Parallel()
	for r, p := range map[Result]pods.ProbeResult{Unknown: pods.ProbeUnknown, Success: pods.ProbeSuccess, Failure: pods.ProbeFailure} {
		if pods.ProbeResult(r) != p || r.String() != p.String() {
			t.Errorf("prober %s converts to pods %s", r, pods.ProbeResult(r))
		}
	}
}

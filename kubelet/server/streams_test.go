package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	criremote "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/kubebus/kubebus/apiserver/pki"
)

// echoStreams runs one made-up command: it copies stdin to stdout,
// reports its arguments and the pod on stderr and exits with the length
// of its input modulo 256.
type echoStreams struct{}

func (echoStreams) Exec(_ context.Context, ns, pod, container string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, _ bool, _ <-chan criremote.TerminalSize) (int, error) {
	if pod != "p" {
		return 0, PodNotFound(ns, pod)
	}
	n, err := io.Copy(stdout, stdin)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(stderr, "%s/%s/%s %s", ns, pod, container, strings.Join(cmd, " "))
	return int(n % 256), nil
}

func (echoStreams) Attach(context.Context, string, string, string, io.Reader, io.WriteCloser, io.WriteCloser, bool, <-chan criremote.TerminalSize) error {
	return errors.New("no attach")
}

func (echoStreams) PortForward(_ context.Context, _, _ string, _ int32, stream io.ReadWriteCloser) error {
	return stream.Close()
}

// restConfig is a client-go configuration for the test server with the
// given client certificate.
func restConfig(ts *testServer, certFile, keyFile string) *rest.Config {
	return &rest.Config{Host: ts.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: ts.ca.CAFile, CertFile: certFile, KeyFile: keyFile}}
}

func TestExecOverSPDY(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	ts := startServer(t, ca, Config{Logs: testLocator{}, Streams: echoStreams{},
		Authorize: func(user string, _ []string) error {
			if user != pki.AdminUser {
				return errors.New("user " + user + " may not exec")
			}
			return nil
		}})
	u, err := url.Parse(ts.URL + "/exec/ns/p/c?command=cat&command=-n&input=1&output=1&error=1")
	if err != nil {
		t.Fatal(err)
	}
	exec, err := remotecommand.NewSPDYExecutor(restConfig(ts, ca.AdminCertFile, ca.AdminKeyFile), http.MethodPost, u)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	err = exec.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdin: strings.NewReader("hello"), Stdout: &out, Stderr: &errb})
	var ee utilexec.ExitError
	if !errors.As(err, &ee) || ee.ExitStatus() != 5 {
		t.Fatalf("err = %v, want exit code 5", err)
	}
	if out.String() != "hello" || errb.String() != "ns/p/c cat -n" {
		t.Errorf("stdout %q, stderr %q", out.String(), errb.String())
	}

	// A pod the runtime does not know: the client sees the message.
	u.Path = "/exec/ns/nope/c"
	exec, _ = remotecommand.NewSPDYExecutor(restConfig(ts, ca.AdminCertFile, ca.AdminKeyFile), http.MethodPost, u)
	err = exec.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
	if err == nil || !strings.Contains(err.Error(), `pod "nope" does not exist`) {
		t.Errorf("unknown pod: %v", err)
	}

	// Only the authorized user.
	cert, key, err := ca.IssueClient("someone", nil)
	if err != nil {
		t.Fatal(err)
	}
	exec, _ = remotecommand.NewSPDYExecutor(restConfig(ts, cert, key), http.MethodPost, u)
	err = exec.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "may not exec") {
		t.Errorf("unauthorized user: %v", err)
	}
}

func TestStreamsUnsupported(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	ts := startServer(t, ca, Config{Logs: testLocator{}})
	c := client(t, ca, ca.AdminCertFile, ca.AdminKeyFile)
	for _, path := range []string{"/exec/ns/p/c?command=true&output=1", "/attach/ns/p/c?output=1", "/portForward/ns/p?port=80"} {
		code, body := get(t, c, ts.URL+path)
		if code != http.StatusNotImplemented || !strings.Contains(body, "not supported") {
			t.Errorf("%s: %d %q, want 501", path, code, body)
		}
	}
}

func TestExecBadRequests(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	ts := startServer(t, ca, Config{Logs: testLocator{}, Streams: echoStreams{}})
	c := client(t, ca, ca.AdminCertFile, ca.AdminKeyFile)
	for path, want := range map[string]string{
		"/exec/ns/p/c?output=1":     "at least 1 command",
		"/exec/ns/p/c?command=true": "stdin, stdout, stderr",
	} {
		code, body := get(t, c, ts.URL+path)
		if code != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("%s: %d %q, want 400 with %q", path, code, body, want)
		}
	}
}

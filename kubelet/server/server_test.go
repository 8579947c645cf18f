package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubebus/kubebus/apiserver/pki"
)

// testLog is one log a testLocator knows.
type testLog struct {
	path    string
	running atomic.Bool
	err     error
}

// testLocator maps "ns/pod/container" (plus "/previous") to logs.
type testLocator map[string]*testLog

func (l testLocator) LogPath(_ context.Context, ns, pod, container string, previous bool) (string, func() bool, error) {
	key := ns + "/" + pod + "/" + container
	if previous {
		key += "/previous"
	}
	e, ok := l[key]
	switch {
	case !ok && previous:
		return "", nil, PreviousNotFound(pod, container)
	case !ok:
		return "", nil, ContainerNotFound(pod, container)
	case e.err != nil:
		return "", nil, e.err
	}
	return e.path, e.running.Load, nil
}

// writeLog creates a log file with content in dir.
func writeLog(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func appendLog(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// testServer is a kubelet server on 127.0.0.1 with a CA-issued serving
// certificate.
type testServer struct {
	URL    string
	ca     *pki.Bundle
	cancel context.CancelFunc
	done   chan error
}

func startServer(t *testing.T, ca *pki.Bundle, cfg Config) *testServer {
	t.Helper()
	cert, err := IssueServingCert(CertConfig{CAFile: ca.CAFile, CAKeyFile: ca.CAKeyFile, NodeName: "n1", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Certificate, cfg.ClientCAFile = &cert, ca.CAFile
	cfg.PollInterval = 10 * time.Millisecond
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{URL: "https://" + ln.Addr().String(), ca: ca, cancel: cancel, done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve(ctx, ln) }()
	t.Cleanup(ts.stop)
	return ts
}

func (ts *testServer) stop() {
	ts.cancel()
	<-ts.done
	ts.done <- nil // let a second stop return
}

// client returns an HTTP client trusting the CA and presenting the pair,
// if any.
func client(t *testing.T, roots *pki.Bundle, certFile, keyFile string) *http.Client {
	t.Helper()
	tc := &tls.Config{RootCAs: roots.CA, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	tr := &http.Transport{TLSClientConfig: tc}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestContainerLogs(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	dir := t.TempDir()
	old := writeLog(t, dir, "old.log", "stale\n")
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	logs := testLocator{
		"ns/p/app":          {path: writeLog(t, dir, "app.log", "one\ntwo\nthree\n")},
		"ns/p/app/previous": {path: writeLog(t, dir, "app-0.log", "before the restart\n")},
		"ns/p/old":          {path: old},
		"ns/p/nofile":       {path: filepath.Join(dir, "never-written.log")},
		"ns/p/broken":       {err: errors.New("runtime unavailable")},
		"ns/p/waiting":      {err: ContainerWaiting("p", "waiting", "ContainerCreating")},
	}
	ts := startServer(t, ca, Config{Logs: logs})
	c := client(t, ca, ca.AdminCertFile, ca.AdminKeyFile)

	cases := []struct {
		path     string
		wantCode int
		wantBody string
	}{
		{"/containerLogs/ns/p/app", 200, "one\ntwo\nthree\n"},
		{"/containerLogs/ns/p/app?tailLines=2", 200, "two\nthree\n"},
		{"/containerLogs/ns/p/app?tailLines=0", 200, ""},
		{"/containerLogs/ns/p/app?limitBytes=5", 200, "one\nt"},
		{"/containerLogs/ns/p/app?tailLines=2&limitBytes=6", 200, "two\nth"},
		{"/containerLogs/ns/p/app?timestamps=true", 200, "one\ntwo\nthree\n"},
		{"/containerLogs/ns/p/app?sinceSeconds=60", 200, "one\ntwo\nthree\n"},
		{"/containerLogs/ns/p/old?sinceSeconds=60", 200, ""},
		{"/containerLogs/ns/p/old?sinceSeconds=7200", 200, "stale\n"},
		{"/containerLogs/ns/p/app?previous=true", 200, "before the restart\n"},
		// A followed log of a stopped container ends at the end of the file.
		{"/containerLogs/ns/p/app?follow=true&tailLines=1", 200, "three\n"},
		{"/containerLogs/ns/p/nofile", 200, ""},
		{"/containerLogs/ns/p/nofile?follow=true", 200, ""},
		{"/containerLogs/ns/p/gone", 404, "container \"gone\" in pod \"p\" is not available\n"},
		{"/containerLogs/ns/p/gone?previous=true", 404, "previous terminated container \"gone\" in pod \"p\" not found\n"},
		{"/containerLogs/ns/p/waiting", 400, "container \"waiting\" in pod \"p\" is waiting to start: ContainerCreating\n"},
		{"/containerLogs/ns/p/broken", 500, "locating the log of container \"broken\" in pod \"p\": runtime unavailable\n"},
		{"/containerLogs/ns/p/app?tailLines=-3", 400, "tailLines: must be greater than or equal to 0, got -3\n"},
		{"/containerLogs/ns/p", 404, "404 page not found\n"},
		{"/healthz", 200, "ok"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			code, body := get(t, c, ts.URL+tc.path)
			if code != tc.wantCode || body != tc.wantBody {
				t.Errorf("got %d %q, want %d %q", code, body, tc.wantCode, tc.wantBody)
			}
		})
	}
}

func TestFollow(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	dir := t.TempDir()
	entry := &testLog{path: writeLog(t, dir, "app.log", "one\n")}
	entry.running.Store(true)
	ts := startServer(t, ca, Config{Logs: testLocator{"ns/p/app": entry}})
	c := client(t, ca, ca.AdminCertFile, ca.AdminKeyFile)

	// The deadline only keeps a broken server from hanging the test.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/containerLogs/ns/p/app?follow=true", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	readLine := func(want string) {
		t.Helper()
		got, err := br.ReadString('\n')
		if err != nil || got != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	readLine("one\n")
	appendLog(t, entry.path, "two\n")
	readLine("two\n")
	// Output written just before the container stops is still sent, then
	// the stream ends.
	appendLog(t, entry.path, "three\n")
	entry.running.Store(false)
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "three\n" {
		t.Fatalf("rest = %q, %v; want \"three\\n\" and the end", rest, err)
	}
}

func TestFollowEndsWhenServerStops(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	entry := &testLog{path: writeLog(t, t.TempDir(), "app.log", "one\n")}
	entry.running.Store(true)
	ts := startServer(t, ca, Config{Logs: testLocator{"ns/p/app": entry}})
	c := client(t, ca, ca.AdminCertFile, ca.AdminKeyFile)
	resp, err := c.Get(ts.URL + "/containerLogs/ns/p/app?follow=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "one\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	ts.stop()
	// The stream ends cleanly rather than being cut off.
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after stop: %q, %v; want a clean end", rest, err)
	}
}

func TestFollowTruncatedFile(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	entry := &testLog{path: writeLog(t, t.TempDir(), "app.log", "a long first line\n")}
	entry.running.Store(true)
	ts := startServer(t, ca, Config{Logs: testLocator{"ns/p/app": entry}})
	c := client(t, ca, ca.AdminCertFile, ca.AdminKeyFile)
	resp, err := c.Get(ts.URL + "/containerLogs/ns/p/app?follow=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, _ := br.ReadString('\n'); line != "a long first line\n" {
		t.Fatalf("read %q", line)
	}
	if err := os.Truncate(entry.path, 0); err != nil {
		t.Fatal(err)
	}
	// Wait until the server has seen the file shrink by polling for
	// output written after the truncation: it must come from offset 0.
	appendLog(t, entry.path, "new\n")
	if line, _ := br.ReadString('\n'); line != "new\n" {
		t.Fatalf("after truncation read %q, want \"new\\n\"", line)
	}
	entry.running.Store(false)
}

func TestClientAuthentication(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	other := newCA(t)
	entry := &testLog{path: writeLog(t, t.TempDir(), "app.log", "secret\n")}
	ts := startServer(t, ca, Config{Logs: testLocator{"ns/p/app": entry},
		Authorize: func(user string, _ []string) error {
			if user != pki.AdminUser {
				return errors.New("user " + user + " may not read logs")
			}
			return nil
		}})
	url := ts.URL + "/containerLogs/ns/p/app"

	if _, err := client(t, ca, "", "").Get(url); err == nil {
		t.Error("a client without a certificate got an answer")
	}
	if _, err := client(t, ca, other.AdminCertFile, other.AdminKeyFile).Get(url); err == nil {
		t.Error("a client with a certificate from another CA got an answer")
	}
	cert, key, err := ca.IssueClient("someone", nil)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, client(t, ca, cert, key), url); code != http.StatusForbidden || body != "user someone may not read logs\n" {
		t.Errorf("unauthorized user: %d %q", code, body)
	}
	if code, body := get(t, client(t, ca, ca.AdminCertFile, ca.AdminKeyFile), url); code != 200 || body != "secret\n" {
		t.Errorf("admin: %d %q", code, body)
	}
}

func TestHandlerWithoutTLS(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	cert, err := IssueServingCert(CertConfig{CAFile: ca.CAFile, CAKeyFile: ca.CAKeyFile, NodeName: "n1", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Logs: testLocator{}, Certificate: &cert, ClientCAs: ca.CA})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	code, body := get(t, hs.Client(), hs.URL+"/containerLogs/ns/p/app")
	if code != http.StatusUnauthorized || !strings.Contains(body, "client certificate") {
		t.Errorf("got %d %q, want 401", code, body)
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	cert, err := IssueServingCert(CertConfig{CAFile: ca.CAFile, CAKeyFile: ca.CAKeyFile, NodeName: "n1", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	logs := testLocator{}
	cases := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"no locator", Config{Certificate: &cert, ClientCAs: ca.CA}, "no LogLocator"},
		{"a locator and a texter", Config{Logs: logs, Text: addrTexter{}, Certificate: &cert, ClientCAs: ca.CA}, "set only one"},
		{"no certificate", Config{Logs: logs, ClientCAs: ca.CA}, "no serving certificate"},
		{"two certificates", Config{Logs: logs, Certificate: &cert, CertFile: ca.ServingCertFile, KeyFile: ca.ServingKeyFile, ClientCAs: ca.CA}, "more than one serving certificate source"},
		{"cert without key", Config{Logs: logs, CertFile: ca.ServingCertFile, ClientCAs: ca.CA}, "must be given together"},
		{"unreadable pair", Config{Logs: logs, CertFile: ca.ServingCertFile, KeyFile: ca.AdminKeyFile, ClientCAs: ca.CA}, "loading serving certificate"},
		{"no client CA", Config{Logs: logs, Certificate: &cert}, "no client CA"},
		{"client CA not PEM", Config{Logs: logs, Certificate: &cert, ClientCAFile: ca.CAKeyFile}, "holds no PEM certificate"},
		{"client CA missing", Config{Logs: logs, Certificate: &cert, ClientCAFile: filepath.Join(t.TempDir(), "none")}, "reading client CA"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	// Files and a base tls.Config are accepted too.
	if _, err := New(Config{Logs: logs, CertFile: ca.ServingCertFile, KeyFile: ca.ServingKeyFile, ClientCAFile: ca.CAFile}); err != nil {
		t.Errorf("cert files: %v", err)
	}
	if _, err := New(Config{Logs: logs, TLS: &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: ca.CA}}); err != nil {
		t.Errorf("tls.Config: %v", err)
	}
}

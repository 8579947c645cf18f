package server

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
)

// addrTexter answers for pod "p" with the address it was asked at and the
// container's name, and 404 for other pods.
type addrTexter struct{}

func (addrTexter) LogText(ctx context.Context, ns, pod, container string, previous bool) (string, error) {
	switch {
	case pod != "p":
		return "", PodNotFound(ns, pod)
	case previous:
		return "", PreviousNotFound(pod, container)
	}
	local, _ := ctx.Value(http.LocalAddrContextKey).(net.Addr)
	host, _, _ := net.SplitHostPort(local.String())
	return "asked at " + host + "\nfor " + container + "\nthe end\n", nil
}

// TestLogText serves a made-up log on two loopback addresses with one
// server: each answer names the address it was asked at, and the options
// cut the text as they cut a file.
func TestLogText(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	hosts := []string{"127.0.0.1", "127.0.0.2"}
	cert, err := IssueServingCert(CertConfig{CAFile: ca.CAFile, CAKeyFile: ca.CAKeyFile, NodeName: "n1", Hosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Text: addrTexter{}, Certificate: &cert, ClientCAFile: ca.CAFile, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var lns []net.Listener
	for _, h := range hosts {
		ln, err := net.Listen("tcp", h+":0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lns...) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	c := client(t, ca, ca.AdminCertFile, ca.AdminKeyFile)
	for i, ln := range lns {
		base := "https://" + ln.Addr().String()
		cases := []struct {
			path     string
			wantCode int
			wantBody string
		}{
			{"/containerLogs/ns/p/app", 200, "asked at " + hosts[i] + "\nfor app\nthe end\n"},
			{"/containerLogs/ns/p/app?tailLines=2", 200, "for app\nthe end\n"},
			{"/containerLogs/ns/p/app?tailLines=0", 200, ""},
			{"/containerLogs/ns/p/app?limitBytes=8", 200, "asked at"},
			{"/containerLogs/ns/p/app?tailLines=1&limitBytes=3", 200, "the"},
			{"/containerLogs/ns/p/app?follow=true&sinceSeconds=5", 200, "asked at " + hosts[i] + "\nfor app\nthe end\n"},
			{"/containerLogs/ns/p/app?previous=true", 404, "previous terminated container \"app\" in pod \"p\" not found\n"},
			{"/containerLogs/ns/q/app", 404, "pod \"q\" does not exist in namespace \"ns\" on this node\n"},
			{"/containerLogs/ns/p/app?limitBytes=0", 400, "limitBytes: must be greater than 0, got 0\n"},
		}
		for _, tc := range cases {
			code, body := get(t, c, base+tc.path)
			if code != tc.wantCode || body != tc.wantBody {
				t.Errorf("%s%s: got %d %q, want %d %q", hosts[i], tc.path, code, body, tc.wantCode, tc.wantBody)
			}
		}
	}
	// Without a client certificate nothing is served, as for files.
	if _, err := client(t, ca, "", "").Get("https://" + lns[1].Addr().String() + "/containerLogs/ns/p/app"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client without a certificate: %v, want a TLS error", err)
	}
}

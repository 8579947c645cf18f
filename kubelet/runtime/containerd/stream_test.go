package containerd

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// duplex is a port-forward stream: what the client sends, and what it got.
type duplex struct {
	in     io.Reader
	mu     sync.Mutex
	out    bytes.Buffer
	closed atomic.Bool
}

func (d *duplex) Read(p []byte) (int, error) { return d.in.Read(p) }
func (d *duplex) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.out.Write(p)
}
func (d *duplex) Close() error { d.closed.Store(true); return nil }
func (d *duplex) String() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.out.String()
}

// TestPortForwardHalfClose: the request reaches the server, whose answer,
// sent after it read the request's end, reaches the stream, which is
// closed at the end.
func TestPortForwardHalfClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		req, _ := io.ReadAll(c) // until the client's half-close
		_, _ = c.Write([]byte("got " + strings.ToUpper(string(req))))
	}()
	d := &duplex{in: strings.NewReader("hello")}
	port := int32(ln.Addr().(*net.TCPAddr).Port)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := PortForward(ctx, "", port, d); err != nil {
		t.Fatal(err)
	}
	if d.String() != "got HELLO" || !d.closed.Load() {
		t.Errorf("stream got %q, closed %v", d.String(), d.closed.Load())
	}
}

func TestPortForwardRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := int32(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	d := &duplex{in: strings.NewReader("")}
	if err := PortForward(context.Background(), "", port, d); err == nil || !d.closed.Load() {
		t.Errorf("to a closed port: err %v, stream closed %v", err, d.closed.Load())
	}
	if err := PortForward(context.Background(), "", 0, &duplex{in: strings.NewReader("")}); err == nil {
		t.Error("port 0 accepted")
	}
}

// TestFollowFrom: only what is appended after the start is copied, and
// the copy ends once the writer stops.
func TestFollowFrom(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(p, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var running atomic.Bool
	running.Store(true)
	var out duplex
	done := make(chan error, 1)
	lf, off, err := openAtEnd(p)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	go func() { done <- followFrom(context.Background(), lf, off, &out, running.Load, nil, 5*time.Millisecond) }()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("after 1\n")
	time.Sleep(20 * time.Millisecond)
	_, _ = f.WriteString("after 2\n")
	f.Close()
	running.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("followFrom did not end when the container stopped")
	}
	if out.String() != "after 1\nafter 2\n" {
		t.Errorf("copied %q", out.String())
	}
}

func TestEOFReader(t *testing.T) {
	r := &eofReader{r: strings.NewReader("ab"), eof: make(chan struct{})}
	buf := make([]byte, 1)
	for i := 0; i < 2; i++ {
		if _, err := r.Read(buf); err != nil {
			t.Fatal(err)
		}
		select {
		case <-r.eof:
			t.Fatal("eof before the end")
		default:
		}
	}
	for i := 0; i < 2; i++ { // a second EOF does not close twice
		if _, err := r.Read(buf); err != io.EOF {
			t.Fatalf("err %v", err)
		}
	}
	<-r.eof
}

// TestOutputProgress: a write that blocks is progress; idleness counts
// from the end of the last write.
func TestOutputProgress(t *testing.T) {
	p := newOutputProgress()
	release := make(chan struct{})
	w := &progressWriter{w: writerFunc(func(b []byte) (int, error) { <-release; return len(b), nil }), p: p}
	time.Sleep(20 * time.Millisecond)
	if p.idle() < 20*time.Millisecond {
		t.Fatalf("idle %v before any write", p.idle())
	}
	done := make(chan struct{})
	go func() { _, _ = w.Write([]byte("x")); close(done) }()
	time.Sleep(30 * time.Millisecond)
	if p.idle() != 0 {
		t.Errorf("idle %v during a blocked write", p.idle())
	}
	close(release)
	<-done
	if d := p.idle(); d > 20*time.Millisecond {
		t.Errorf("idle %v right after a write", d)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

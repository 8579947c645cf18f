package netns

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// ServeHTTP runs an HTTP server on addr inside the namespace that answers
// every request with body (a backend's name); it stops when the test ends.
func (n *Node) ServeHTTP(t testing.TB, addr, body string) {
	t.Helper()
	var l net.Listener
	if err := n.Do(func() (err error) { l, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatalf("netns: listening on %s in %s: %v", addr, n.Name, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

// Dialer opens TCP connections from inside a namespace: one goroutine, on
// a thread that entered the namespace, creates every socket (a socket stays
// in the namespace it was made in, whichever thread uses it later).
type Dialer struct {
	reqs chan dialReq
}

type dialReq struct {
	ctx     context.Context
	addr    string
	timeout time.Duration
	res     chan dialRes
}

type dialRes struct {
	conn net.Conn
	err  error
}

// Dialer returns a Dialer for the namespace; it stops when the test ends.
func (n *Node) Dialer(t testing.TB) *Dialer {
	t.Helper()
	d := &Dialer{reqs: make(chan dialReq)}
	entered := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- n.Do(func() error {
			close(entered)
			for r := range d.reqs {
				c, err := (&net.Dialer{Timeout: r.timeout}).DialContext(r.ctx, "tcp", r.addr)
				r.res <- dialRes{c, err}
			}
			return nil
		})
	}()
	select {
	case <-entered:
	case err := <-errc:
		t.Fatalf("netns: dialer in %s: %v", n.Name, err)
	}
	t.Cleanup(func() { close(d.reqs) })
	return d
}

// Dial connects to addr from the namespace.
func (d *Dialer) Dial(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	res := make(chan dialRes, 1)
	d.reqs <- dialReq{ctx: ctx, addr: addr, timeout: timeout, res: res}
	r := <-res
	return r.conn, r.err
}

// Get fetches http://addr/ on a new connection and returns the body of a
// 200 answer.
func (d *Dialer) Get(addr string, timeout time.Duration) (string, error) {
	conn, err := d.Dial(context.Background(), addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	if _, err := fmt.Fprintf(conn, "GET / HTTP/1.0\r\nHost: %s\r\n\r\n", addr); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d: %q", resp.StatusCode, b)
	}
	return string(b), nil
}

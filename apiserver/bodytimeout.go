package apiserver

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// DefaultRequestBodyTimeout is Config.RequestBodyTimeout's default:
// upstream's request timeout, which bounds a non-long-running request,
// body included.
const DefaultRequestBodyTimeout = 60 * time.Second

// errBodyTimeout is what reading a request body returns once its deadline
// passed; readBody answers it with 408.
var errBodyTimeout = errors.New("the request body did not arrive")

// bodyDeadline sets a read deadline on the connection of every request
// with a body, RequestBodyTimeout from now, so that a client trickling a
// body in cannot hold a handler, and the in-flight slot it took, for
// ever. The deadline is lifted once the body is read: a request then
// runs under its own timeout, and nothing else on the connection is cut
// short. Requests without a body (watches, logs, upgrades) get none, so
// unlike http.Server's ReadTimeout this never ends a long-running
// request.
func (s *Server) bodyDeadline(next http.Handler) http.Handler {
	timeout := s.cfg.RequestBodyTimeout
	if timeout <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.Header.Get("Upgrade") != "" {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(timeout)); err != nil {
			// A writer without deadlines (not a server connection).
			next.ServeHTTP(w, r)
			return
		}
		r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, timeout: timeout}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts its connection's read deadline at the end of the
// body, and says errBodyTimeout when the deadline cut the body short.
type deadlineBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
	lift    sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		b.lift.Do(func() { _ = b.rc.SetReadDeadline(time.Time{}) })
	case isTimeout(err):
		return n, fmt.Errorf("%w within %s", errBodyTimeout, b.timeout)
	}
	return n, err
}

// isTimeout reports whether err is a connection's read deadline passing.
func isTimeout(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

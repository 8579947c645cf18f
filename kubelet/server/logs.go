package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"time"
)

// readChunk is the most a log copy reads at a time.
const readChunk = 32 << 10

// serveContainerLogs answers GET /containerLogs/{namespace}/{pod}/{container}.
func (s *Server) serveContainerLogs(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ns, pod, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	opts, err := ParseLogOptions(r.URL.Query(), time.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if s.cfg.Text != nil {
		s.serveLogText(ctx, w, ns, pod, container, opts)
		return
	}
	path, running, err := s.cfg.Logs.LogPath(ctx, ns, pod, container, opts.Previous)
	if err == nil && path == "" {
		err = errors.New("the runtime reports no log file")
	}
	if err != nil {
		s.writeLogError(ctx, w, err, ns, pod, container)
		return
	}
	if running == nil {
		running = func() bool { return false }
	}
	f, err := openLog(ctx, path, opts.Follow, running, s.cfg.PollInterval)
	if err != nil {
		s.cfg.Logger.ErrorContext(ctx, "opening container log", "path", path, "err", err)
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("opening the log of container %q in pod %q: %v", container, pod, err))
		return
	}
	flush := func() {}
	if fl, ok := w.(http.Flusher); ok {
		flush = fl.Flush
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	flush() // a follower sees the answer before the first new line
	if f == nil {
		return
	}
	defer f.Close()
	if err := copyLog(ctx, w, flush, f, running, opts, s.cfg.PollInterval); err != nil {
		s.cfg.Logger.DebugContext(ctx, "streaming container log ended", "path", path, "err", err)
	}
}

// writeLogError answers the error of a LogLocator or LogTexter: an *Error
// with its code and message, any other with 500.
func (s *Server) writeLogError(ctx context.Context, w http.ResponseWriter, err error, ns, pod, container string) {
	var e *Error
	if errors.As(err, &e) {
		writeError(w, e.Code, e.Message)
		return
	}
	s.cfg.Logger.ErrorContext(ctx, "locating container log", "namespace", ns, "pod", pod, "container", container, "err", err)
	writeError(w, http.StatusInternalServerError, fmt.Sprintf("locating the log of container %q in pod %q: %v", container, pod, err))
}

// openLog opens the log at path. A file that does not exist yet is an empty
// log: without follow, or once the container is not running, openLog returns
// a nil file; with follow it waits for the file to appear.
func openLog(ctx context.Context, path string, follow bool, running func() bool, poll time.Duration) (*os.File, error) {
	for {
		alive := follow && running()
		f, err := os.Open(path)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if !alive {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(poll):
		}
	}
}

// copyLog writes the part of the log f that opts select to w, calling flush
// after each write. With opts.Follow it then polls f every poll for
// appended data until running reports false and the file is read to its
// end, or ctx ends. A file that shrinks (truncated in place) is read again
// from its start.
func copyLog(ctx context.Context, w io.Writer, flush func(), f *os.File, running func() bool, opts LogOptions, poll time.Duration) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("reading log file: %w", err)
	}
	off := int64(0)
	switch {
	case !opts.Since.IsZero() && st.ModTime().Before(opts.Since):
		off = st.Size() // nothing in the file is as recent as asked
	case opts.TailLines != nil:
		if off, err = tailStart(f, st.Size(), *opts.TailLines); err != nil {
			return err
		}
	}
	remaining := int64(-1)
	if opts.LimitBytes != nil {
		remaining = *opts.LimitBytes
	}
	buf := make([]byte, readChunk)
	stopped := false
	for {
		p := buf
		if remaining >= 0 && remaining < int64(len(p)) {
			p = p[:remaining]
		}
		n, err := f.ReadAt(p, off)
		if n > 0 {
			if _, werr := w.Write(p[:n]); werr != nil {
				return fmt.Errorf("writing log: %w", werr)
			}
			flush()
			off += int64(n)
			if remaining >= 0 {
				if remaining -= int64(n); remaining == 0 {
					return nil
				}
			}
			continue
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("reading log file: %w", err)
		}
		// At the end of the file.
		if !opts.Follow || stopped {
			return nil
		}
		if !running() {
			// Read once more: the container may have written before it
			// stopped but after the read above.
			stopped = true
			continue
		}
		if st, err := f.Stat(); err == nil && st.Size() < off {
			off = 0
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

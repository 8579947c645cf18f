package server

import (
	"context"
	"net/http"
	"strings"
)

// serveLogText answers a log request with the text Config.Text makes up,
// cut as opts say.
func (s *Server) serveLogText(ctx context.Context, w http.ResponseWriter, ns, pod, container string, opts LogOptions) {
	text, err := s.cfg.Text.LogText(ctx, ns, pod, container, opts.Previous)
	if err != nil {
		s.writeLogError(ctx, w, err, ns, pod, container)
		return
	}
	text, err = cutText(text, opts)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(text))
}

// cutText applies tailLines, then limitBytes, to a whole log.
func cutText(text string, opts LogOptions) (string, error) {
	if opts.TailLines != nil {
		off, err := tailStart(strings.NewReader(text), int64(len(text)), *opts.TailLines)
		if err != nil {
			return "", err
		}
		text = text[off:]
	}
	if opts.LimitBytes != nil && int64(len(text)) > *opts.LimitBytes {
		text = text[:*opts.LimitBytes]
	}
	return text, nil
}

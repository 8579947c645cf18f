package apiserver

import (
	"context"
	"net/http"
	"sync"
)

// warningSink collects the warnings of one request (admission plugins add
// them: PodSecurity's warn mode, for one) until its response header is
// written.
type warningSink struct {
	mu   sync.Mutex
	msgs []string
	sent bool
}

type warningsKey struct{}

// addWarnings adds msgs to the warnings of the request in ctx, if any.
func addWarnings(ctx context.Context, msgs []string) {
	if len(msgs) == 0 {
		return
	}
	if s, ok := ctx.Value(warningsKey{}).(*warningSink); ok {
		s.mu.Lock()
		s.msgs = append(s.msgs, msgs...)
		s.mu.Unlock()
	}
}

// write sends the collected warnings as Warning headers, once.
func (s *warningSink) write(w http.ResponseWriter) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sent {
		return
	}
	s.sent = true
	writeWarnings(w, s.msgs)
}

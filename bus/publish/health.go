package publish

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultStallWindow is how long the publisher may stay behind etcd
// without catching up before Ready fails.
const DefaultStallWindow = 30 * time.Second

// maxSamples bounds the etcd revisions remembered while the publisher is
// behind; when full, newer ones are not recorded (the oldest decide).
const maxSamples = 1024

// sample is an etcd revision and when the publisher first saw it.
type sample struct {
	at  time.Time
	rev int64
}

// health tracks how far the publisher is behind etcd and why. The
// publisher's goroutine, its revision poller and Ready share it.
type health struct {
	mu      sync.Mutex
	log     *slog.Logger
	m       *Metrics
	window  time.Duration
	now     func() time.Time
	leading bool
	etcdRev int64 // the latest etcd revision seen
	doneRev int64 // every change up to it is on the bus
	// behind holds etcd revisions newer than doneRev, oldest first, with
	// the time each was first seen: the oldest tells since when the bus
	// has been missing something.
	behind []sample
	// cause is the failure the publisher is retrying ("" while it
	// works), class its kind (logged when it changes); storage remembers
	// a storage failure of the same episode, which later errors
	// (JetStream disabled) would otherwise hide.
	cause, class, storage string
	since                 time.Time
}

func newHealth(log *slog.Logger, m *Metrics, window time.Duration) *health {
	return &health{log: log, m: m, window: window, now: time.Now}
}

// lead records whether this publisher leads; only a leader can be behind.
func (h *health) lead(leading bool, doneRev int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.leading, h.behind, h.doneRev = leading, nil, doneRev
	h.gauge()
}

// etcd records etcd's current revision.
func (h *health) etcd(rev int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.etcdRev = max(h.etcdRev, rev)
	if h.leading && rev > h.doneRev && len(h.behind) < maxSamples && (len(h.behind) == 0 || h.behind[len(h.behind)-1].rev < rev) {
		h.behind = append(h.behind, sample{h.now(), rev})
	}
	h.gauge()
}

// done records that every change up to rev is on the bus.
func (h *health) done(rev int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if rev <= h.doneRev {
		return
	}
	h.doneRev, h.etcdRev = rev, max(h.etcdRev, rev)
	n := 0
	for n < len(h.behind) && h.behind[n].rev <= rev {
		n++
	}
	h.behind = h.behind[n:]
	h.gauge()
}

func (h *health) gauge() {
	lag := h.etcdRev - h.doneRev
	if !h.leading || lag < 0 {
		lag = 0
	}
	h.m.lag.Set(float64(lag))
}

// fail records an error the publisher is retrying, logging once per cause.
func (h *health) fail(what string, err error) {
	class, c := cause(err)
	h.mu.Lock()
	defer h.mu.Unlock()
	if class == "storage" {
		h.storage = c
	}
	h.cause = c
	if class == h.class {
		return
	}
	if h.class == "" {
		h.since = h.now()
	}
	h.class = class
	h.log.Error("publishing to the bus fails; retrying until it works (etcd keeps every change meanwhile)", "what", what, "cause", c, "err", err)
}

// ok records that a publish worked.
func (h *health) ok() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.class == "" {
		return
	}
	h.log.Info("publishing to the bus works again", "after", h.now().Sub(h.since).Round(time.Millisecond), "cause", h.cause)
	h.cause, h.class, h.storage = "", "", ""
}

// ready fails when the bus has missed an etcd revision for longer than
// the window.
func (h *health) ready() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.leading || len(h.behind) == 0 {
		return nil
	}
	age := h.now().Sub(h.behind[0].at)
	if age <= h.window {
		return nil
	}
	why := h.cause
	if why == "" {
		why = "no publish error reported"
	}
	if h.storage != "" && h.storage != why {
		why += " (after " + h.storage + ")"
	}
	return fmt.Errorf("bus publisher is %d revisions behind etcd for %s: %s", h.etcdRev-h.doneRev, age.Round(time.Second), why)
}

// cause classifies an error and says what it means for an operator.
func cause(err error) (class, text string) {
	switch {
	case isStorage(err):
		return "storage", "the bus store is full: " + err.Error()
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled):
		return "disabled", "JetStream is not enabled on the NATS server (it disables itself when its disk is full): " + err.Error()
	case isStreamGone(err):
		return "stream", "a bus stream is missing or NATS does not answer: " + err.Error()
	}
	return "other", err.Error()
}

// isStorage reports a JetStream store or stream that has no room.
func isStorage(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jetstream.ErrorCode(10023), // insufficient resources
			jetstream.ErrorCode(10047): // insufficient storage resources available
			return true
		}
	}
	if err == nil {
		return false
	}
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "insufficient") || strings.Contains(s, "maximum bytes") || strings.Contains(s, "no space")
}

// isStreamGone reports an error that may mean a stream does not exist:
// the caller checks the streams before acting on it (no responders also
// means JetStream is down).
func isStreamGone(err error) bool {
	var apiErr *jetstream.APIError
	switch {
	case err == nil:
		return false
	case errors.Is(err, jetstream.ErrStreamNotFound), errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders):
		return true
	case errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamNotFound:
		return true
	}
	return strings.Contains(strings.ToLower(err.Error()), "stream not found")
}

// Ready fails, with the reason, when the bus has been missing an etcd
// revision for longer than Config.StallWindow: publishing fails (a full
// store, NATS down) or is slower than etcd's writes. It passes on a
// publisher that does not lead: another API server publishes.
func (p *Publisher) Ready(context.Context) error { return p.health.ready() }

package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/utils/clock"

	"github.com/kubebus/kubebus/bus"
)

// Recorder records what the proxy programmed: rev is the highest bus
// revision the programmed rules reflect (every change to Services and
// EndpointSlices up to it is in them), at is when the sync that
// programmed them finished. proxy/record writes it into the node's proxy
// Lease (bus/lifecycle's contract) through the API server.
type Recorder interface {
	RecordProgrammed(ctx context.Context, rev int64, at time.Time) error
}

// Pacing of the records.
const (
	// recordInterval is the least time between two records: changes
	// programmed meanwhile are recorded together, the latest winning.
	recordInterval = time.Second
	// maxRecordBackoff bounds the wait before retrying a failed record.
	maxRecordBackoff = 30 * time.Second
	// headTimeout bounds one read of the bus's newest event.
	headTimeout = 5 * time.Second
)

// programmed is one successful sync: the revisions of the two caches,
// read before its rules were built, and when it finished.
type programmed struct {
	services, slices int64
	at               time.Time
}

// resource names one of the two resources the proxy follows.
type resource int

const (
	servicesResource resource = iota
	slicesResource
)

// busHead reads the revision of the newest event of a resource on the bus
// (0 when the bus retains none).
type busHead interface {
	last(ctx context.Context, r resource) (int64, error)
}

// claim is the highest revision the rules of p reflect for sure.
//
// Each cache's revision is the last event of its own resource it applied:
// the rules reflect every change up to the smaller of the two. That alone
// would stall at the last change of the quieter resource (a Service
// changes far less often than its EndpointSlices), so the lagging cache is
// checked against the bus: when no event of its resource newer than its
// revision is on the bus, it holds every change published so far, and the
// bus publishes in revision order, so every change up to the other
// cache's revision too. The check reads the bus after the rules were
// built, which only makes it stricter.
func claim(ctx context.Context, head busHead, p programmed, log *slog.Logger) int64 {
	lo, hi := min(p.services, p.slices), max(p.services, p.slices)
	if lo == hi || head == nil {
		return lo
	}
	lagging := servicesResource
	if p.slices < p.services {
		lagging = slicesResource
	}
	last, err := head.last(ctx, lagging)
	if err != nil {
		log.Debug("proxy: cannot read the bus's newest event; recording the lower revision", "err", err)
		return lo
	}
	if last <= lo {
		return hi
	}
	return lo
}

// historyHead is busHead on KUBE_HISTORY.
type historyHead struct {
	js     jetstream.JetStream
	stream jetstream.Stream // looked up on first use
}

func (h *historyHead) last(ctx context.Context, r resource) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, headTimeout)
	defer cancel()
	if h.stream == nil {
		st, err := h.js.Stream(ctx, bus.HistoryStream)
		if err != nil {
			return 0, fmt.Errorf("looking up %s: %w", bus.HistoryStream, err)
		}
		h.stream = st
	}
	filter := bus.ResourceFilter("", "services", "")
	if r == slicesResource {
		filter = bus.ResourceFilter("discovery.k8s.io", "endpointslices", "")
	}
	msg, err := h.stream.GetLastMsgForSubject(ctx, filter)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("reading the last message of %s: %w", filter, err)
	}
	return bus.HeaderInt(msg.Header, bus.HeaderRevision), nil
}

// recorder hands what the syncs programmed to a Recorder from a goroutine
// of its own, so that a slow or failing API server never holds up the
// rules: at most one record per interval, the latest sync's winning, and
// a trailing one so the last state is always recorded; a record that
// fails is retried with backoff.
type recorder struct {
	rec        Recorder
	head       busHead
	log        *slog.Logger
	clock      clock.Clock
	interval   time.Duration
	maxBackoff time.Duration

	mu       sync.Mutex
	pending  *programmed // the latest sync not yet recorded
	wake     chan struct{}
	recorded atomic.Int64 // the highest revision recorded
}

func newRecorder(rec Recorder, head busHead, log *slog.Logger) *recorder {
	return &recorder{rec: rec, head: head, log: log, clock: clock.RealClock{},
		interval: recordInterval, maxBackoff: maxRecordBackoff, wake: make(chan struct{}, 1)}
}

// offer hands over a successful sync; it never blocks. A sync whose
// revisions are not beyond what is recorded has nothing new to say.
func (r *recorder) offer(p programmed) {
	if max(p.services, p.slices) <= r.recorded.Load() {
		return
	}
	r.mu.Lock()
	r.pending = &p
	r.mu.Unlock()
	r.poke()
}

func (r *recorder) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// take returns the pending sync and forgets it.
func (r *recorder) take() *programmed {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pending
	r.pending = nil
	return p
}

// run records the offers until ctx ends.
func (r *recorder) run(ctx context.Context) {
	var last time.Time // of the last attempt
	var backoff time.Duration
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		if !last.IsZero() {
			if wait := max(r.interval, backoff) - r.clock.Since(last); wait > 0 {
				select {
				case <-ctx.Done():
					return
				case <-r.clock.After(wait):
				}
			}
		}
		p := r.take()
		if p == nil {
			continue
		}
		rev := claim(ctx, r.head, *p, r.log)
		if rev <= r.recorded.Load() {
			// The lagging cache has yet to catch up: the sync its next
			// event brings offers again.
			continue
		}
		last = r.clock.Now()
		if err := r.rec.RecordProgrammed(ctx, rev, p.at); err != nil {
			if ctx.Err() != nil {
				return
			}
			backoff = min(max(2*backoff, r.interval), r.maxBackoff)
			r.log.Warn("proxy: recording the programmed revision failed; retrying", "revision", rev, "retryIn", backoff, "err", err)
			r.mu.Lock()
			if r.pending == nil {
				r.pending = p
			}
			r.mu.Unlock()
			r.poke()
			continue
		}
		backoff = 0
		r.recorded.Store(rev)
		r.log.Debug("proxy: recorded the programmed revision", "revision", rev, "at", p.at)
	}
}

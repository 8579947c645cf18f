package informer

import (
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Stats counts what an informer did since it was created.
type Stats struct {
	// Applied is the number of live events that changed the cache.
	Applied uint64
	// Stale is the number of live events skipped because the cache already
	// held that revision or a newer one (the snapshot can be newer than
	// the point the live consumer starts from).
	Stale uint64
	// Redelivered is the number of messages skipped because their stream
	// sequence was already applied.
	Redelivered uint64
	// Malformed is the number of messages skipped because they were not
	// events of this informer's objects.
	Malformed uint64
	// Gaps is the number of times the informer found it had missed events:
	// a broken chain, a GAP event, or unread messages evicted from the
	// stream.
	Gaps uint64
	// Resyncs is the number of times the cache was rebuilt from the state
	// stream after a gap.
	Resyncs uint64
	// Reopens is the number of times the live consumer was reopened or
	// recreated (NATS outages, lost deliveries).
	Reopens uint64
	// HandlerPanics is the number of handler calls that panicked.
	HandlerPanics uint64
}

// outcome is what happened to a message, or to the informer.
type outcome int

const (
	outApplied outcome = iota
	outStale
	outRedelivered
	outMalformed
	outGap
	outResync
	outReopen
	outHandlerPanic
	numOutcomes
)

// counters are the live Stats, readable from any goroutine, mirrored to
// Prometheus when registered.
type counters struct {
	n    [numOutcomes]atomic.Uint64
	prom [numOutcomes]prometheus.Counter // nil without metrics
	m    *metrics
}

func newCounters(m *metrics) *counters {
	c := &counters{m: m}
	if m != nil {
		for o, name := range map[outcome]string{outApplied: "applied", outStale: "stale", outRedelivered: "redelivered", outMalformed: "malformed"} {
			c.prom[o] = m.messages.WithLabelValues(name)
		}
		c.prom[outResync], c.prom[outReopen], c.prom[outHandlerPanic] = m.resyncs, m.reopens, m.panics
	}
	return c
}

func (c *counters) inc(o outcome) {
	c.n[o].Add(1)
	if c.prom[o] != nil {
		c.prom[o].Inc()
	}
}

// handlerPanic counts a handler call that panicked (from any goroutine
// that tells handlers: AddHandler's too).
func (c *counters) handlerPanic() { c.inc(outHandlerPanic) }

// gap counts a detected gap with its reason.
func (c *counters) gap(reason string) {
	c.n[outGap].Add(1)
	if c.m != nil {
		c.m.gaps.WithLabelValues(reason).Inc()
	}
}

func (c *counters) stats() Stats {
	return Stats{
		Applied: c.n[outApplied].Load(), Stale: c.n[outStale].Load(), Redelivered: c.n[outRedelivered].Load(),
		Malformed: c.n[outMalformed].Load(), Gaps: c.n[outGap].Load(), Resyncs: c.n[outResync].Load(), Reopens: c.n[outReopen].Load(),
		HandlerPanics: c.n[outHandlerPanic].Load(),
	}
}

// metrics are the Prometheus view of an informer; nil when not registered.
type metrics struct {
	messages *prometheus.CounterVec // by outcome
	gaps     *prometheus.CounterVec // by reason
	resyncs  prometheus.Counter
	reopens  prometheus.Counter
	panics   prometheus.Counter
	revision prometheus.Gauge
	objects  prometheus.Gauge
	pending  prometheus.Gauge
	synced   prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, labels prometheus.Labels) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubebus_informer_messages_total", ConstLabels: labels,
			Help: "Bus messages the informer read, by outcome (applied, stale, redelivered, malformed)."}, []string{"outcome"}),
		gaps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubebus_informer_gaps_total", ConstLabels: labels,
			Help: "Times the informer found it had missed events, by reason."}, []string{"reason"}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{Name: "kubebus_informer_resyncs_total", ConstLabels: labels,
			Help: "Times the cache was rebuilt from the state stream."}),
		reopens: prometheus.NewCounter(prometheus.CounterOpts{Name: "kubebus_informer_consumer_reopens_total", ConstLabels: labels,
			Help: "Times the live consumer was reopened or recreated."}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{Name: "kubebus_informer_handler_panics_total", ConstLabels: labels,
			Help: "Handler calls that panicked; the informer recovered and went on."}),
		revision: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubebus_informer_revision", ConstLabels: labels,
			Help: "The last revision applied to the cache."}),
		objects: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubebus_informer_objects", ConstLabels: labels,
			Help: "Objects in the cache."}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubebus_informer_pending_messages", ConstLabels: labels,
			Help: "Messages on the live stream the informer has not read yet, as of its last check."}),
		synced: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubebus_informer_synced", ConstLabels: labels,
			Help: "1 once the cache holds the state and the history pending at start."}),
	}
	for _, c := range []prometheus.Collector{m.messages, m.gaps, m.resyncs, m.reopens, m.panics, m.revision, m.objects, m.pending, m.synced} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("informer: registering metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) observe(rev int64, objects int) {
	if m != nil {
		m.revision.Set(float64(rev))
		m.objects.Set(float64(objects))
	}
}

func (m *metrics) setPending(n uint64) {
	if m != nil {
		m.pending.Set(float64(n))
	}
}

func (m *metrics) setSynced() {
	if m != nil {
		m.synced.Set(1)
	}
}

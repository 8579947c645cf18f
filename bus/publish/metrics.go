package publish

import "github.com/prometheus/client_golang/prometheus"

// Metrics of the publisher.
type Metrics struct {
	leader       prometheus.Gauge
	published    prometheus.Counter
	skipped      prometheus.Counter
	gaps         prometheus.Counter
	lastRevision prometheus.Gauge
	latency      prometheus.Histogram
	lag          prometheus.Gauge
	resets       prometheus.Counter
}

// NewMetrics creates the metrics and registers them on reg (when not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		leader:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubebus_publisher_leader", Help: "1 while this API server publishes etcd revisions to the bus."}),
		published:    prometheus.NewCounter(prometheus.CounterOpts{Name: "kubebus_publisher_revisions_total", Help: "etcd revisions published to the bus."}),
		skipped:      prometheus.NewCounter(prometheus.CounterOpts{Name: "kubebus_publisher_skipped_total", Help: "Keys under /registry that were not objects and were not published."}),
		gaps:         prometheus.NewCounter(prometheus.CounterOpts{Name: "kubebus_publisher_gaps_total", Help: "Ranges of revisions etcd compacted before they were published."}),
		lastRevision: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubebus_publisher_last_revision", Help: "The last etcd revision published."}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kubebus_publisher_publish_duration_seconds", Help: "Time to publish one revision to every stream.",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1}}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubebus_bus_publisher_lag_revisions",
			Help: "etcd's latest revision minus the revision every change up to which is on the bus (0 unless this API server publishes)."}),
		resets: prometheus.NewCounter(prometheus.CounterOpts{Name: "kubebus_publisher_stream_resets_total",
			Help: "Times the bus streams were found missing or recreated and were reseeded from etcd."}),
	}
	if reg != nil {
		reg.MustRegister(m.leader, m.published, m.skipped, m.gaps, m.lastRevision, m.latency, m.lag, m.resets)
	}
	return m
}

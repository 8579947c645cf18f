package stages

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the stage histograms and the count of pods dropped.
type Metrics struct {
	duration *prometheus.HistogramVec
	dropped  *prometheus.CounterVec
}

// Buckets of the stage histograms: 1 ms doubling to about 4.4 minutes.
var Buckets = prometheus.ExponentialBuckets(0.001, 2, 19)

// NewMetrics creates the metrics, with every stage and reason at zero, and
// registers them on reg (when not nil).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kubebus_pod_stage_duration_seconds",
			Help:    "Time pods took from one lifecycle step to the next, as the bus recorded the steps (stage: created_scheduled, scheduled_sandbox, sandbox_started, started_ready, ready_endpoints, endpoints_programmed; the last one once per proxy).",
			Buckets: Buckets,
		}, []string{"stage"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubebus_pod_stage_pods_dropped_total",
			Help: "Pods the stage tracker stopped following before they were done (reason: capacity, stale, gap).",
		}, []string{"reason"}),
	}
	for _, s := range Stages {
		m.duration.WithLabelValues(s.String())
	}
	for _, r := range DropReasons {
		m.dropped.WithLabelValues(string(r))
	}
	if reg != nil {
		if err := reg.Register(m.duration); err != nil {
			return nil, fmt.Errorf("registering the stage metrics: %w", err)
		}
		if err := reg.Register(m.dropped); err != nil {
			reg.Unregister(m.duration)
			return nil, fmt.Errorf("registering the stage metrics: %w", err)
		}
	}
	return m, nil
}

// Record adds an outcome of the tracker to the metrics.
func (m *Metrics) Record(o Outcome) {
	for _, ob := range o.Observed {
		m.duration.WithLabelValues(ob.Stage.String()).Observe(ob.Duration.Seconds())
	}
	for r, n := range o.Dropped {
		m.dropped.WithLabelValues(string(r)).Add(float64(n))
	}
}

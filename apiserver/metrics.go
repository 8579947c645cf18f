package apiserver

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kubebus/kubebus/internal/crash"
)

// Metrics are the API server's Prometheus metrics, on a registry of its own.
type Metrics struct {
	Registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	etcd     *prometheus.HistogramVec
	// watchRejected counts watches refused because their user held
	// Config.MaxWatchesPerUser already.
	watchRejected prometheus.Counter
}

// NewMetrics creates the metrics with upstream's names.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Requests served, by verb, resource, subresource and HTTP code.",
		}, []string{"verb", "resource", "subresource", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Request latency, by verb, resource and subresource (watches excluded).",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"verb", "resource", "subresource"}),
		etcd: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "etcd_request_duration_seconds",
			Help:    "etcd request latency by operation.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5},
		}, []string{"operation"}),
		watchRejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kubebus_apiserver_watches_rejected_total",
			Help: "Watches refused with 429 because their user held the most concurrent watches one user may.",
		}),
	}
	// Panics recovered anywhere in the process (internal/crash).
	_ = crash.Register(m.Registry)
	m.Registry.MustRegister(m.requests, m.latency, m.etcd, m.watchRejected,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveEtcd records one etcd request; pass it as storage.Config.Observe.
func (m *Metrics) ObserveEtcd(op string, d time.Duration) {
	m.etcd.WithLabelValues(op).Observe(d.Seconds())
}

func (m *Metrics) observeRequest(verb, resource, sub string, code int, d time.Duration) {
	if code == 0 {
		code = http.StatusOK
	}
	m.requests.WithLabelValues(verb, resource, sub, strconv.Itoa(code)).Inc()
	if verb != "watch" {
		m.latency.WithLabelValues(verb, resource, sub).Observe(d.Seconds())
	}
}

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}

package apiserver

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kubebus/kubebus/apiserver/admission"
	"github.com/kubebus/kubebus/apiserver/auth"
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

	// Authentication, authorization and admission, under upstream's
	// names, labels and buckets.
	authnAttempts   *prometheus.CounterVec
	authnLatency    *prometheus.HistogramVec
	authzAttempts   *prometheus.CounterVec
	authzLatency    *prometheus.HistogramVec
	admissionPlugin *prometheus.HistogramVec
	admissionStep   *prometheus.HistogramVec
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
		authnAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "authentication_attempts",
			Help: "Counter of authenticated attempts, by result (success, failure, error).",
		}, []string{"result"}),
		authnLatency: byResult("authentication_duration_seconds", "Authentication duration in seconds broken out by result."),
		authzAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "authorization_attempts_total",
			Help: "Counter of authorization attempts broken down by result. It can be either 'allowed', 'denied', 'no-opinion' or 'error'.",
		}, []string{"result"}),
		authzLatency: byResult("authorization_duration_seconds", "Authorization duration in seconds broken out by result."),
		admissionPlugin: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_admission_controller_admission_duration_seconds",
			Help:    "Admission controller latency histogram in seconds, identified by name and broken out for each operation and type (validate or admit).",
			Buckets: []float64{0.005, 0.025, 0.1, 0.5, 1.0, 2.5},
		}, []string{"name", "type", "operation", "rejected"}),
		admissionStep: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_admission_step_admission_duration_seconds",
			Help:    "Admission sub-step latency histogram in seconds, broken out for each operation and step type (validate or admit).",
			Buckets: []float64{0.005, 0.025, 0.1, 0.5, 1.0, 2.5},
		}, []string{"type", "operation", "rejected"}),
	}
	// Panics recovered anywhere in the process (internal/crash).
	_ = crash.Register(m.Registry)
	m.Registry.MustRegister(m.requests, m.latency, m.etcd, m.watchRejected,
		m.authnAttempts, m.authnLatency, m.authzAttempts, m.authzLatency, m.admissionPlugin, m.admissionStep,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// byResult is a latency histogram by result, with upstream's buckets for
// authentication and authorization (1 ms doubling to about 16 s).
func byResult(name, help string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: name, Help: help, Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"result"})
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

// requestVerbs are the verbs request metrics are labelled with; any
// other is counted as "other".
var requestVerbs = map[string]bool{"get": true, "list": true, "watch": true, "create": true, "update": true,
	"patch": true, "delete": true, "deletecollection": true}

// cleanVerb is verb when it is one of requestVerbs, else "other" (a
// method no handler serves, such as one a client made up).
func cleanVerb(verb string) string {
	if requestVerbs[verb] {
		return verb
	}
	return "other"
}

// observeAuthentication records one authentication: result is success,
// failure (no credential, or one no authenticator knows) or error.
func (m *Metrics) observeAuthentication(result string, d time.Duration) {
	m.authnAttempts.WithLabelValues(result).Inc()
	m.authnLatency.WithLabelValues(result).Observe(d.Seconds())
}

// observeAuthorization records one authorizer decision, with upstream's
// results: an error counts as such unless the answer was Allow.
func (m *Metrics) observeAuthorization(dec auth.Decision, err error, d time.Duration) {
	result := "no-opinion"
	switch {
	case dec == auth.Allow:
		result = "allowed"
	case err != nil:
		result = "error"
	case dec == auth.Deny:
		result = "denied"
	}
	m.authzAttempts.WithLabelValues(result).Inc()
	m.authzLatency.WithLabelValues(result).Observe(d.Seconds())
}

// PluginObserver implements admission.Recorder.
func (m *Metrics) PluginObserver(name string, validating bool, op auth.Operation, rejected bool) admission.Observer {
	return m.admissionPlugin.WithLabelValues(name, admissionType(validating), string(op), strconv.FormatBool(rejected))
}

// StepObserver implements admission.Recorder.
func (m *Metrics) StepObserver(validating bool, op auth.Operation, rejected bool) admission.Observer {
	return m.admissionStep.WithLabelValues(admissionType(validating), string(op), strconv.FormatBool(rejected))
}

// admissionType is upstream's type label: admit for mutating, validate
// for validating.
func admissionType(validating bool) string {
	if validating {
		return "validate"
	}
	return "admit"
}

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}

package proxy

import "github.com/prometheus/client_golang/prometheus"

// metrics are upstream kube-proxy's, by their names.
type metrics struct {
	duration    prometheus.Histogram
	programming prometheus.Histogram
	lastSync    prometheus.Gauge
	failures    prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubeproxy_sync_proxy_rules_duration_seconds", Help: "SyncProxyRules latency in seconds",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		programming: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubeproxy_network_programmer_duration_seconds", Help: "In Cluster Network Programming Latency in seconds",
			Buckets: prometheus.LinearBuckets(0.25, 0.25, 2*4),
		}),
		lastSync: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubeproxy_sync_proxy_rules_last_timestamp_seconds", Help: "The last time proxy rules were successfully synced",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kubeproxy_sync_proxy_rules_nftables_sync_failures_total", Help: "Cumulative proxy nftables sync failures",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.duration, m.programming, m.lastSync, m.failures)
	}
	return m
}

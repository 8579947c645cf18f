// Package bench holds kubebus's end-to-end benchmarks. Each starts a real
// `kubebus server` process and drives it over its REST API, then reports
// throughput and latency percentiles as benchmark metrics. Run them with
// `make bench`; results are recorded in docs/benchmarks.md.
package bench

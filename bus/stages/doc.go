// Package stages measures how long pods take over each step of their way
// to serving traffic, as Prometheus histograms, from the changes the bus
// carries on KUBE_HISTORY.
//
// The steps are package lifecycle's: created, scheduled, sandbox, started,
// ready (read from the pod), endpoints (an EndpointSlice lists the pod as
// ready) and programmed (a node's proxy Lease says its rules reflect a
// revision at or after that EndpointSlice's). Each time a pod reaches a new
// step, the time since the step before it is observed in
// kubebus_pod_stage_duration_seconds under the stage named after the two
// steps ("created_scheduled", …, "endpoints_programmed"); a pod that jumps
// steps in one revision observes 0 for the ones it skipped. The time of a
// step is the time the bus stored the change that shows it (for
// "programmed", the time the proxy wrote into its Lease), so the
// histograms measure the cluster, not this reader's lag.
//
// Tracker is the pure core: it is fed decoded events in stream order and
// returns what to observe. It only follows pods it saw created, and it is
// bounded: it follows at most Limits.MaxPods pods and forgets those that
// made no progress for Limits.StaleAfter, counting in
// kubebus_pod_stage_pods_dropped_total the pods it stopped following
// before they were ready. A GAP event, or the stream being created again,
// clears it, since the times of steps across a gap cannot be trusted.
//
// Run is the little I/O there is: an ephemeral ordered consumer on
// KUBE_HISTORY, filtered to pods, EndpointSlices, the proxies' Leases and
// gap events, that starts with what is stored from the moment Run starts
// and feeds the Tracker.
package stages

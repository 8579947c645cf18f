// Package tap is the live tail of the bus behind `kubebus tap`: it reads
// every change in the cluster from the KUBE_HISTORY stream, filters it and
// renders it as a table with field-level diffs, as JSON lines or as YAML.
//
// The package is split the way the rest of kubebus is: the parts that decide
// (filters, --since parsing, the revision-to-sequence search, the JSON field
// diff, which matches list elements by their strategic-merge-patch merge
// key, the renderers, the lag table) are pure functions tested with tables;
// tail.go and lag.go do the little NATS I/O there is, and remote.go and
// lagremote.go serve the tap and the lag table from the API server to
// users with a kubeconfig only.
//
// The tap is read-only. It never publishes, and it reads with ordered
// consumers, which are ephemeral, unacknowledged and held in memory on the
// server; it creates no durable consumer. `kubebus tap lag` only reads
// consumer and stream state.
package tap

// Package lifecycle names the steps an object goes through on its way from
// created to serving traffic, and reads from one state of a Pod, an
// EndpointSlice or a proxy's Lease which of them have happened. It is pure:
// `kubebus why` walks an object's history on the bus with it, and the API
// server's stage-latency histograms observe the same steps as they happen,
// so the two always agree on what "scheduled" or "ready" means.
package lifecycle

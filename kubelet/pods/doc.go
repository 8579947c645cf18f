// Package pods is the kubelet's pure pod logic: given the desired pod and
// what the container runtime reports, it decides what to do next (Compute
// returns an ordered Plan of runtime actions), what status to report
// (ComputeStatus), and how to turn a container of the spec into a
// runtime.ContainerConfig (ResolveEnv, BuildContainerConfig). Nothing here
// touches the runtime, the API server, the disk or the clock: the caller
// passes the time in and does the I/O the plan asks for.
//
// The caller's duties, in a sync of one pod:
//
//  1. List the pod's sandboxes and containers from the runtime (by the
//     runtime.LabelPodUID label) and read the probe results.
//  2. Call Compute and execute its Actions in order, stopping at the first
//     failure (the next sync recomputes from the new observations). Keep
//     Plan.Backoff for the next call; re-sync at Plan.RetryAt.
//  3. Call ComputeStatus with Plan.Waiting (plus any start errors of its
//     own, such as CreateContainerConfigError) and post the status when it
//     changed.
package pods

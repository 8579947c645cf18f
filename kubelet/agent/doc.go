// Package agent is the real kubelet: it runs the pods bound to its node on
// a container runtime (containerd through kubelet/runtime/containerd).
//
// Pods arrive from two sources: the bus (only the pods bound to this node,
// through a durable consumer of KUBE_NODEPODS) and a manifest directory of
// static pods, which also get mirror pods in the API. Each pod is synced by
// one worker at a time: the runtime's view of the pod and the probe results
// go into the pure planner (kubelet/pods.Compute), whose actions run in
// order; then the pure status (kubelet/pods.ComputeStatus) is written
// through the status subresource when it changed. A relist of the runtime
// every second (the PLEG) notices containers that exited; probe results
// changing re-sync their pod at once.
//
// The node itself is registered and kept alive by kubelet/node.Agent; the
// container logs are served by kubelet/server.
package agent

// Package framework is the scheduler's plugin model: the small extension-point
// interfaces (PreFilter, Filter, PreScore, Score) that return a *Status, the
// per-cycle CycleState, and the data a scheduling cycle reads: NodeInfo (a node
// with the pods on it and what they use) and Snapshot (every NodeInfo, the
// namespaces, and the pods nominated to nodes by preemption).
//
// Nothing here does I/O or reads a clock. A scheduling cycle is a pure
// function of a Profile, a Snapshot and a pod (see package cycle).
//
// The caller's duties:
//   - keep one Snapshot as the scheduler's cache: AddNode/UpdateNode/RemoveNode
//     and AddPod/UpdatePod/RemovePod from the informers, SetNamespace for
//     namespace labels (namespaceSelector in pod affinity), and
//     AddNominatedPod/RemoveNominatedPod for pods with
//     status.nominatedNodeName, and SetWorkloadSelector for the selectors of
//     Services, ReplicaSets, StatefulSets and ReplicationControllers
//     (default topology spreading);
//   - assume a pod at once after a successful cycle (AddPod with
//     spec.nodeName set to the chosen node) and RemovePod it if the bind
//     fails, so the next cycle sees the placement;
//   - serialise: a Snapshot is not safe for concurrent use, so mutate it
//     only between cycles (a cycle may read it from several goroutines).
package framework

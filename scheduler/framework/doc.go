// Package framework is the scheduler's plugin model: the small extension-point
// interfaces (PreFilter, Filter, PreScore, Score; Reserve and PreBind once a
// node is chosen) that return a *Status, the
// per-cycle CycleState, and the data a scheduling cycle reads: NodeInfo (a node
// with the pods on it and what they use) and Snapshot (every NodeInfo, the
// namespaces, and the pods nominated to nodes by preemption).
//
// Nothing here does I/O or reads a clock. A scheduling cycle is a pure
// function of a Profile, a Snapshot and a pod (see package cycle). Only
// PreBind plugins, which run in the binding goroutine after the cycle, do
// I/O, through the BindHandle they are given.
//
// The caller's duties:
//   - keep one Snapshot as the scheduler's cache: AddNode/UpdateNode/RemoveNode
//     and AddPod/UpdatePod/RemovePod from the informers, SetNamespace for
//     namespace labels (namespaceSelector in pod affinity), and
//     AddNominatedPod/RemoveNominatedPod for pods with
//     status.nominatedNodeName, and SetWorkloadSelector for the selectors of
//     Services, ReplicaSets, StatefulSets and ReplicationControllers
//     (default topology spreading), and SetClaim/SetVolume/SetStorageClass
//     (and their removals) for PersistentVolumeClaims, PersistentVolumes
//     and StorageClasses (volume binding);
//   - assume a pod at once after a successful cycle (AddPod with
//     spec.nodeName set to the chosen node), run the profile's Reserve
//     plugins, then, in the binding goroutine, its PreBind plugins before
//     the Binding; on a failure RunUnreserve and RemovePod it, so the next
//     cycle sees the placement only while it holds;
//   - serialise: a Snapshot is not safe for concurrent use, so mutate it
//     only between cycles (a cycle may read it from several goroutines).
package framework

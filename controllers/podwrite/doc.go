// Package podwrite is the pod writing the workload controllers (ReplicaSet,
// DaemonSet, Job) share: a Client making the pod writes through a
// kubernetes.Interface (create, delete pinned to a UID, JSON merge patch;
// Writer is its interface, for fakes),
// creating pods in slow-start batches of parallel creates (Creates), and
// deleting pods in parallel (Deletes), each recording upstream's
// SuccessfulCreate, FailedCreate, SuccessfulDelete and FailedDelete Events
// on the controller's object.
//
// What to create and what to expect of the cache stays with each
// controller: it passes the pod to create and hooks for the writes the
// cache will not show.
package podwrite

// Event reasons, upstream's.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedDelete     = "FailedDelete"
)

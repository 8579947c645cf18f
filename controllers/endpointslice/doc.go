// Package endpointslice is the EndpointSlice controller: for every Service
// with a selector it keeps discovery.k8s.io/v1 EndpointSlices, owned by the
// Service, that list each matching pod with an IP once, with its ready,
// serving and terminating conditions and the service's ports resolved
// against the pod's containers.
//
// Each sync computes the whole desired set and changes as few slices as it
// can: an endpoint stays in the slice that holds it, new endpoints fill free
// room before a slice is created, and a slice that did not change is not
// written. Slice names are derived from the service's UID and an ordinal, so
// a sync that runs on a stale cache fails with AlreadyExists or Conflict and
// retries instead of creating duplicates.
package endpointslice

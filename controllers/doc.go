// Package controllers is the controller-manager's shared runtime: a
// Controller drains a rate-limited work queue of object keys into a
// level-based Reconcile(ctx, key); a Manager runs every informer at all times
// (standbys keep warm caches) and the controllers only while it holds the
// kube-system/kube-controller-manager Lease, taken through the API.
//
// Caller's duties: informers come from bus/informer (no LIST/WATCH on the API
// server); Reconcile reads from those caches and writes only through the REST
// API; an error requeues the key with backoff unless it is Terminal; a
// Result.RequeueAfter polls. Reconcile must be idempotent: it may run again
// for a key at any time, including after a leader change.
package controllers

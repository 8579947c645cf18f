// Package garbagecollector deletes objects whose owners are gone and carries
// out the Orphan and Foreground deletion propagation policies.
//
// It keeps a metadata-only cache of every resource it is given (bus
// informers of *metav1.PartialObjectMetadata) and, from the caches'
// events, a Graph of ownerReferences (owner UID -> dependents). Its work
// queue holds object UIDs; each Reconcile looks at one object:
//
//   - an object being deleted with the "orphan" finalizer: remove the
//     ownerReference to it from every dependent, then the finalizer;
//   - an object being deleted with the "foregroundDeletion" finalizer:
//     queue its dependents for deletion and, once no dependent with
//     blockOwnerDeletion=true remains, remove the finalizer so the API
//     server removes the object;
//   - an object with ownerReferences: classify each owner as present,
//     absent (dangling) or waiting for its dependents' deletion, and delete
//     the object or drop the references that no longer hold.
//
// An owner counts as absent only when it is missing from the cache (or the
// cache holds another object under its name) and a GET through the API
// confirms it, since the cache may lag. Every write goes through the REST
// API with a metadata client. An object is re-read with a GET before it is
// deleted or patched, and judged again if its ownerReferences changed;
// deletes carry the UID and resourceVersion read as preconditions, and
// patches are JSON patches that first test the UID and the entries they
// change.
//
// Resources the server begins to serve at runtime, such as those of
// CustomResourceDefinitions, are added with AddResource and removed with
// RemoveResource; the collector runs their informers itself, under the
// last cache Caches returns.
//
// The caller's duties: build the GC before the caches run (it adds its
// handlers in New), run every informer from Caches as a controllers.Cache
// and the GC itself as a controllers.Runnable (both are what
// controllers.Manager takes), and give each replica its own
// Config.Instance.
package garbagecollector

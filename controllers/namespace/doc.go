// Package namespace is the namespace controller: it empties a namespace
// that is being deleted and then lets the API server remove it.
//
// For a namespace with a deletionTimestamp (phase Terminating) and the
// "kubernetes" spec finalizer, each pass deletes, per resource, the
// collection of objects the caches still show in it (background
// propagation), and records what is left in the namespace's conditions
// (NamespaceContentRemaining, NamespaceFinalizersRemaining,
// NamespaceDeletionContentFailure, as upstream). While anything is left it
// polls the caches (Result.RequeueAfter). When the caches show nothing, it
// confirms with one small LIST per resource, since the caches may lag, then
// PUTs .../namespaces/<name>/finalize without the "kubernetes" finalizer and
// DELETEs the namespace again, so that the API server removes it.
//
// The caller's duties: give it the namespaces' cache (New adds a handler,
// so call it before the caches run) and, for every namespaced resource the
// server serves, a metadata cache that can list a namespace (the garbage
// collector's informers fit), including those served from
// CustomResourceDefinitions, which come and go at runtime (AddResource,
// RemoveResource); run it as a controllers.Runnable.
package namespace

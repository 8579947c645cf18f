// Package defaults fills in the field values a Kubernetes API server sets on
// objects it stores, so that what a client reads back from kubebus looks like
// what it would read back from an upstream cluster.
//
// Default covers four upstream sources at once: the versioned defaulting
// functions (restartPolicy, probe thresholds, service session affinity and so
// on), the conversions that normalise an object (a secret's stringData moves
// into data), the registry strategies that fill fields on create (a
// namespace's "kubernetes" finalizer, a service's clusterIPs) and the parts of
// the ServiceAccount and Priority admission plugins that need no lookup. It
// never adds tolerations; the caller owns that.
//
// Default is pure and idempotent: it reads nothing but the object, and
// applying it twice gives the same object as applying it once. Callers run it
// on create and on update, before validation.
package defaults

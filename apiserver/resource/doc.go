// Package resource is the table of API resources kubebus serves.
//
// Each row names a kind (group, version, kind, plural, scope, short names,
// categories, subresources) and the hooks that give it Kubernetes semantics:
// defaulting, validation, field-selector attributes, printer columns and the
// parts of an object a status update may change. The REST handlers are
// generic over this table: adding a resource means adding a row, not a
// handler.
package resource

// Package validation checks objects on create and update the way the upstream
// API server does, returning field errors whose types, paths and messages
// match what kubectl users see in a 422 Invalid response.
//
// ValidateCreate and ValidateUpdate expect objects that have been defaulted
// (see package defaults): like upstream, they report fields that defaulting
// always fills, such as spec.restartPolicy, as required. They read nothing
// but the objects they are given; checks that need other objects (a
// PriorityClass lookup, the node-port range, quota) belong to the caller.
package validation

// Package clusterroleaggregation is the ClusterRole aggregation controller
// (upstream's "clusterrole-aggregation"): a ClusterRole with an
// aggregationRule holds the union of the rules of every other ClusterRole
// any of its selectors matches, kept current as ClusterRoles change.
//
// Aggregate is the pure part; the controller reads the ClusterRoles' cache
// (New adds a handler, so call it before the cache runs) and writes the
// rules with an update. Run it while leading.
package clusterroleaggregation

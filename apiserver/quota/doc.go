// Package quota measures what objects charge against a ResourceQuota, as
// upstream's quota evaluators do: pods (object count, compute requests and
// limits, the pod scopes), services (count, node ports, load balancers),
// persistent volume claims (count and storage), the legacy counted names
// (configmaps, secrets, resourcequotas, replicationcontrollers) and a
// generic count/<resource>.<group> for every other namespaced resource.
//
// Everything here is a pure function of its arguments, the time included:
// the admission plugin charges one object at a time, the quota controller
// sums whole namespaces, and both read their objects themselves.
package quota

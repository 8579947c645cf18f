// Package rbac is role-based access control as upstream Kubernetes does it:
// an Authorizer that finds the rules bound to a user in Roles,
// ClusterRoles and their bindings (read from in-memory caches through a
// Lister, never from storage per request), an admission check that stops a
// user from granting permissions they do not hold (EscalationCheck), the
// bootstrap policy of the system roles and bindings (Bootstrap), and the
// pure reconciliation that keeps those defaults current (Reconcile).
package rbac

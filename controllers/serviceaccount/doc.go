// Package serviceaccount is the service accounts controller (upstream's
// "serviceaccount"): every active namespace has a ServiceAccount named
// "default", created again when it is deleted. Terminating namespaces get
// none.
//
// The caller's duties: give it the namespaces' and the service accounts'
// caches (New adds handlers, so call it before they run) and run the result
// while leading.
package serviceaccount

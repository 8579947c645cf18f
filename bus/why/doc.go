// Package why answers "why isn't my thing running yet?" from the bus: it
// reads the retained history of an object, its owners and its dependents
// (through the API server's tap endpoint, so a kubeconfig and the user's
// RBAC rights are enough), rebuilds the causal chain from creation to
// serving traffic with who wrote each step and how long it took, and names
// where the chain stops and why, with the evidence.
//
// The package is split the usual way: history.go holds the revisions read
// from the bus, explain*.go turn them into a Report without any I/O (tested
// with tables), render.go prints it, and source.go and gather.go do the
// reading.
package why

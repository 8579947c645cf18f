// Package admission holds the API server's admission plugins and the Chain
// that runs them. Each plugin is an auth.Admitter: it may mutate the object
// of a write or reject the write; the server runs the chain after defaulting
// and before validation.
package admission

// Package storage is kubebus's only etcd client.
//
// It stores objects as opaque bytes under keys of the form
//
//	/registry/<group>/<resource>/<namespace>/<name>   (namespaced)
//	/registry/<group>/<resource>/<name>               (cluster-scoped)
//
// where <group> is "core" for the legacy core group. An object's
// resourceVersion is the etcd mod revision of its key, and every write is a
// compare-and-swap transaction on that revision (or on the key's absence for
// a create), so two writers racing on one object cannot both win. A LIST is a
// single consistent etcd range read; the revision in its response header is
// the list's resourceVersion, and later pages of a paginated list are read at
// that same revision so a client sees one snapshot.
//
// The package knows nothing of Kubernetes types: callers encode and decode.
// The API server encodes objects as JSON (see apiserver/codec.go), the same
// bytes the bus republishes, so every consumer decodes one format.
//
// With Config.Transformer set, values are encrypted at rest: every value
// written under a key is transformed on its way in and every value read
// (get, list, watch, a failed compare-and-swap) on its way out, so callers
// only ever see plaintext; a value that does not decrypt is an error naming
// its key. Side keys are stored as given.
package storage

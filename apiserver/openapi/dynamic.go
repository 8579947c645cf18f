package openapi

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The documents of custom resources come and go with their CRDs: each
// group-version of one is served from a document its caller builds (from
// the CRD's schema) and sets here, next to the built-in ones Build made.

// SetGroupVersion serves doc, an OpenAPI v3 document in JSON, at
// /openapi/v3/apis/<group>/<version>, replacing what was there, and lists
// it in the index.
func (d *Documents) SetGroupVersion(gv schema.GroupVersion, doc []byte) error {
	key := gvKey(gv)
	var parsed map[string]any
	if err := json.Unmarshal(doc, &parsed); err != nil {
		return fmt.Errorf("openapi: document of %s: %w", key, err)
	}
	g, err := encodeV3(key, parsed)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, builtin := d.groups[key]; builtin {
		return fmt.Errorf("openapi: %s is a built-in group version", key)
	}
	d.extra[key] = g
	return d.reindexLocked()
}

// RemoveGroupVersion stops serving a document SetGroupVersion set.
func (d *Documents) RemoveGroupVersion(gv schema.GroupVersion) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.extra[gvKey(gv)]; !ok {
		return
	}
	delete(d.extra, gvKey(gv))
	_ = d.reindexLocked() // the index of documents that encoded once encodes again
}

// group returns the document of an index key.
func (d *Documents) group(key string) (*groupDoc, bool) {
	if g, ok := d.groups[key]; ok {
		return g, true
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	g, ok := d.extra[key]
	return g, ok
}

// currentIndex returns the v3 index.
func (d *Documents) currentIndex() encoded {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.index
}

// reindexLocked encodes the index of every document; d.mu is held.
func (d *Documents) reindexLocked() error {
	type indexEntry struct {
		ServerRelativeURL string `json:"serverRelativeURL"`
	}
	index := map[string]indexEntry{}
	for key, g := range d.groups {
		index[key] = indexEntry{ServerRelativeURL: g.url}
	}
	for key, g := range d.extra {
		index[key] = indexEntry{ServerRelativeURL: g.url}
	}
	data, err := json.Marshal(map[string]any{"paths": index})
	if err != nil {
		return fmt.Errorf("openapi: encoding v3 index: %w", err)
	}
	d.index = encoded{data: data, etag: hash(data), contentType: mediaJSON}
	return nil
}

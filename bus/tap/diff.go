package tap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Change is one changed field between two versions of an object. Old or New
// is nil when the field is absent on that side.
type Change struct {
	Path string          `json:"path"`
	Old  json.RawMessage `json:"old,omitempty"`
	New  json.RawMessage `json:"new,omitempty"`
}

// ignoredPaths are bookkeeping fields that change on every write.
var ignoredPaths = map[string]bool{
	"metadata.resourceVersion": true,
	"metadata.managedFields":   true,
	"metadata.generation":      true,
}

// Diff compares two JSON documents field by field and returns what changed,
// in path order (map keys sorted, list elements in order). Paths read like
// kubectl's: spec.replicas, metadata.labels.tier,
// spec.containers[name=web].image, spec.ports[0].port; a key with a dot or
// a bracket is quoted: metadata.labels["app.kubernetes.io/name"].
//
// Maps are compared key by key, also when one side is absent, so adding a
// label reports that label. Lists whose elements are all objects with a
// unique "name" are matched by name; other lists by index. Anything else
// (scalars, whole list elements added or removed, a value changing type) is
// reported as one change. metadata.resourceVersion, managedFields and
// generation are ignored.
func Diff(oldDoc, newDoc []byte) ([]Change, error) {
	o, err := decodeJSON(oldDoc)
	if err != nil {
		return nil, fmt.Errorf("tap: decoding the old object: %w", err)
	}
	n, err := decodeJSON(newDoc)
	if err != nil {
		return nil, fmt.Errorf("tap: decoding the new object: %w", err)
	}
	var d differ
	d.walk("", o, n, o != nil, n != nil)
	return d.out, nil
}

func decodeJSON(b []byte) (any, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

type differ struct{ out []Change }

// walk compares a and b at path; hasA and hasB say whether each side exists.
func (d *differ) walk(path string, a, b any, hasA, hasB bool) {
	if ignoredPaths[path] || (!hasA && !hasB) {
		return
	}
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	switch {
	case aIsMap && bIsMap,
		aIsMap && !hasB && len(am) > 0,
		bIsMap && !hasA && len(bm) > 0:
		d.walkMaps(path, am, bm)
		return
	}
	if al, ok := a.([]any); ok && hasB {
		if bl, ok := b.([]any); ok {
			d.walkLists(path, al, bl)
			return
		}
	}
	if hasA && hasB && reflect.DeepEqual(a, b) {
		return
	}
	d.leaf(path, a, b, hasA, hasB)
}

// leaf records a change of the whole value at path.
func (d *differ) leaf(path string, a, b any, hasA, hasB bool) {
	c := Change{Path: path}
	if hasA {
		c.Old = mustJSON(a)
	}
	if hasB {
		c.New = mustJSON(b)
	}
	d.out = append(d.out, c)
}

func (d *differ) walkMaps(path string, a, b map[string]any) {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		av, hasA := a[k]
		bv, hasB := b[k]
		d.walk(childPath(path, k), av, bv, hasA, hasB)
	}
}

func (d *differ) walkLists(path string, a, b []any) {
	if an, ok := namedElements(a); ok {
		if bn, ok := namedElements(b); ok && (len(a) > 0 || len(b) > 0) {
			names := make([]string, 0, len(an)+len(bn))
			for k := range an {
				names = append(names, k)
			}
			for k := range bn {
				if _, ok := an[k]; !ok {
					names = append(names, k)
				}
			}
			sort.Strings(names)
			for _, name := range names {
				av, hasA := an[name]
				bv, hasB := bn[name]
				d.element(path+"[name="+name+"]", av, bv, hasA, hasB)
			}
			return
		}
	}
	for i := 0; i < max(len(a), len(b)); i++ {
		var av, bv any
		if i < len(a) {
			av = a[i]
		}
		if i < len(b) {
			bv = b[i]
		}
		d.element(path+"["+strconv.Itoa(i)+"]", av, bv, i < len(a), i < len(b))
	}
}

// element compares two list elements; one added or removed is one change.
func (d *differ) element(path string, a, b any, hasA, hasB bool) {
	if hasA && hasB {
		d.walk(path, a, b, true, true)
		return
	}
	d.leaf(path, a, b, hasA, hasB)
}

// namedElements indexes a list by its elements' "name" when every element
// is an object with a distinct non-empty string name.
func namedElements(l []any) (map[string]any, bool) {
	byName := make(map[string]any, len(l))
	for _, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, false
		}
		name, ok := m["name"].(string)
		if !ok || name == "" || strings.ContainsAny(name, "[]") {
			return nil, false
		}
		if _, dup := byName[name]; dup {
			return nil, false
		}
		byName[name] = e
	}
	return byName, true
}

func childPath(path, key string) string {
	if key == "" || strings.ContainsAny(key, ".[]\" ") {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("tap: re-encoding decoded JSON: %v", err)) // decoded JSON always encodes
	}
	return b
}

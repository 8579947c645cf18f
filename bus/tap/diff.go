package tap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/strategicpatch"
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

// Diff compares two JSON documents field by field and returns what changed.
// It is DiffResource without a resource: the objects' own apiVersion and
// kind, when they have them, name their type.
func Diff(oldDoc, newDoc []byte) ([]Change, error) {
	return DiffResource("", "", oldDoc, newDoc)
}

// DiffResource compares two versions of an object of resource (plural) in
// group ("" for core) field by field and returns what changed, in path
// order (map keys sorted; list elements by index, or those matched by a key
// in the old list's order and then the new elements). Paths read like
// kubectl's: spec.replicas, metadata.labels.tier,
// spec.containers[name=web].image, status.conditions[type=Available].status,
// spec.tolerations[0].key; a key with a dot or a bracket is quoted:
// metadata.labels["app.kubernetes.io/name"].
//
// Maps are compared key by key, also when one side is absent, so adding a
// label reports that label. Lists are matched element by element as a
// strategic merge patch matches them: by the list's merge key
// (patchMergeKey of the Go type: conditions by type, containers by name,
// container ports by containerPort, ...), so elements that only moved are
// no change. The type is the built-in kind the API server stores group and
// resource as, else the one the objects' apiVersion and kind name. A list
// without a merge key (or of a kind not known here, such as a custom
// resource) whose elements are all objects with a unique "name", or else a
// unique "type", is matched by that; any other list by index. Anything else
// (scalars, whole list elements added or removed, a value changing type) is
// reported as one change. metadata.resourceVersion, managedFields and
// generation are ignored.
func DiffResource(group, resource string, oldDoc, newDoc []byte) ([]Change, error) {
	o, err := decodeJSON(oldDoc)
	if err != nil {
		return nil, fmt.Errorf("tap: decoding the old object: %w", err)
	}
	n, err := decodeJSON(newDoc)
	if err != nil {
		return nil, fmt.Errorf("tap: decoding the new object: %w", err)
	}
	var d differ
	d.walk("", field{meta: patchMetaFor(group, resource, o, n)}, o, n, o != nil, n != nil)
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

// field is what the Go type says about a value: meta describes it (for a
// list: its elements) and mergeKey is a list's merge key. Both are empty
// when the type is not known.
type field struct {
	meta     strategicpatch.LookupPatchMeta
	mergeKey string
}

type differ struct{ out []Change }

// walk compares a and b at path; hasA and hasB say whether each side exists.
func (d *differ) walk(path string, f field, a, b any, hasA, hasB bool) {
	if ignoredPaths[path] || (!hasA && !hasB) {
		return
	}
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	switch {
	case aIsMap && bIsMap,
		aIsMap && !hasB && len(am) > 0,
		bIsMap && !hasA && len(bm) > 0:
		d.walkMaps(path, f.meta, am, bm)
		return
	}
	if al, ok := a.([]any); ok && hasB {
		if bl, ok := b.([]any); ok {
			d.walkLists(path, f, al, bl)
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

func (d *differ) walkMaps(path string, meta strategicpatch.LookupPatchMeta, a, b map[string]any) {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		av, hasA := a[k]
		bv, hasB := b[k]
		_, aList := av.([]any)
		_, bList := bv.([]any)
		d.walk(childPath(path, k), childField(meta, k, aList && bList), av, bv, hasA, hasB)
	}
}

// childField looks up the patch metadata of the value under key of an
// object described by meta; list says the value is a list on both sides.
// An unknown type, or a key the type does not have, gives no metadata.
func childField(meta strategicpatch.LookupPatchMeta, key string, list bool) field {
	if meta == nil {
		return field{}
	}
	// A Go map (labels, a ResourceList, ...) holds values of one type
	// under any key; strategicpatch looks up struct fields only.
	if s, ok := meta.(strategicpatch.PatchMetaFromStruct); ok {
		if t := derefType(s.T); t.Kind() == reflect.Map {
			elem := derefType(t.Elem())
			if list {
				if elem.Kind() != reflect.Slice && elem.Kind() != reflect.Array {
					return field{}
				}
				elem = elem.Elem()
			}
			return field{meta: strategicpatch.PatchMetaFromStruct{T: elem}}
		}
	}
	if list {
		sub, pm, err := meta.LookupPatchMetadataForSlice(key)
		if err != nil {
			return field{}
		}
		return field{meta: sub, mergeKey: pm.GetPatchMergeKey()}
	}
	sub, _, err := meta.LookupPatchMetadataForStruct(key)
	if err != nil {
		return field{}
	}
	return field{meta: sub}
}

func derefType(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// walkLists matches the elements of two lists: by the merge key, else by
// a unique name or type, else by index.
func (d *differ) walkLists(path string, f field, a, b []any) {
	elem := field{meta: f.meta}
	keys := []listKey{{"name", true}, {"type", true}}
	if f.mergeKey != "" {
		keys = append([]listKey{{f.mergeKey, false}}, keys...)
	}
	for _, k := range keys {
		ak, aOrder, ok := keyedElements(a, k)
		if !ok {
			continue
		}
		bk, bOrder, ok := keyedElements(b, k)
		if !ok || (len(a) == 0 && len(b) == 0) {
			continue
		}
		for _, tok := range bOrder {
			if _, ok := ak[tok]; !ok {
				aOrder = append(aOrder, tok)
			}
		}
		for _, tok := range aOrder {
			av, hasA := ak[tok]
			bv, hasB := bk[tok]
			d.element(path+"["+k.name+"="+tok+"]", elem, av, bv, hasA, hasB)
		}
		return
	}
	for i := 0; i < max(len(a), len(b)); i++ {
		var av, bv any
		if i < len(a) {
			av = a[i]
		}
		if i < len(b) {
			bv = b[i]
		}
		d.element(path+"["+strconv.Itoa(i)+"]", elem, av, bv, i < len(a), i < len(b))
	}
}

// element compares two list elements; one added or removed is one change.
func (d *differ) element(path string, f field, a, b any, hasA, hasB bool) {
	if hasA && hasB {
		d.walk(path, f, a, b, true, true)
		return
	}
	d.leaf(path, a, b, hasA, hasB)
}

// listKey is a field list elements may be matched by; a guessed one
// (name, type) must hold strings.
type listKey struct {
	name        string
	stringsOnly bool
}

// keyedElements indexes a list by its elements' value of key, in list
// order, when every element is an object with a distinct scalar value
// there (a non-empty string, a number or a boolean). Values are rendered
// as they appear in a path: strings bare unless they need quotes.
func keyedElements(l []any, key listKey) (map[string]any, []string, bool) {
	byKey := make(map[string]any, len(l))
	order := make([]string, 0, len(l))
	for _, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, nil, false
		}
		v := m[key.name]
		if _, isString := v.(string); key.stringsOnly && !isString {
			return nil, nil, false
		}
		tok, ok := keyToken(v)
		if !ok {
			return nil, nil, false
		}
		if _, dup := byKey[tok]; dup {
			return nil, nil, false
		}
		byKey[tok] = e
		order = append(order, tok)
	}
	return byKey, order, true
}

// keyToken renders a merge key's value for a path.
func keyToken(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		if v == "" {
			return "", false
		}
		if strings.ContainsAny(v, "[]\"= ") || !isPrintable(v) {
			return strconv.Quote(v), true
		}
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}

func isPrintable(s string) bool {
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return false
		}
	}
	return true
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

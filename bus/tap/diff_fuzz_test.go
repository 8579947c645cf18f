package tap

import (
	"encoding/json"
	"slices"
	"testing"
)

// FuzzDiff: DiffResource fails only on input that is not JSON; an object
// compared with itself has no changes; every change names a distinct path
// and two values that differ; and comparing the other way round gives the
// same changes with old and new swapped.
func FuzzDiff(f *testing.F) {
	f.Add("apps", "deployments",
		`{"status":{"conditions":[{"type":"Progressing","status":"True"},{"type":"Available","status":"False"}]}}`,
		`{"status":{"conditions":[{"type":"Available","status":"True"},{"type":"Progressing","status":"True"}]}}`)
	f.Add("", "pods",
		`{"spec":{"containers":[{"name":"web","ports":[{"containerPort":80},{"containerPort":"80"}]}]}}`,
		`{"spec":{"containers":[{"name":"web","ports":[{"containerPort":443}]},{"name":"a]b"}]}}`)
	f.Add("", "", `{"apiVersion":"v1","kind":"Service","spec":{"ports":[{"port":1},{"port":2}]}}`, `{"apiVersion":"v1","kind":"Service","spec":{"ports":[{"port":2}]}}`)
	f.Add("example.com", "widgets", `{"a":[{"name":"x","type":"y"},{"name":"x","type":"z"}],"metadata":{"generation":1}}`, `{"a":[[1],{"type":"z"}],"b":{}}`)
	f.Add("", "configmaps", `{"data":{"a.b":"1","":null}}`, `[]`)
	f.Fuzz(func(t *testing.T, group, resource, oldDoc, newDoc string) {
		forward, err := DiffResource(group, resource, []byte(oldDoc), []byte(newDoc))
		if err != nil {
			if json.Valid([]byte(oldDoc)) && json.Valid([]byte(newDoc)) {
				t.Fatalf("DiffResource of valid JSON: %v", err)
			}
			return
		}
		for _, doc := range []string{oldDoc, newDoc} {
			if same, err := DiffResource(group, resource, []byte(doc), []byte(doc)); err != nil || len(same) != 0 {
				t.Fatalf("%s compared with itself: %v, %v", doc, same, err)
			}
		}
		paths := map[string]bool{}
		for _, c := range forward {
			if paths[c.Path] {
				t.Fatalf("path %q twice in %v", c.Path, forward)
			}
			paths[c.Path] = true
			if (c.Old == nil && c.New == nil) || string(c.Old) == string(c.New) {
				t.Fatalf("change %q: %s -> %s is no change", c.Path, c.Old, c.New)
			}
			for _, v := range []json.RawMessage{c.Old, c.New} {
				if v != nil && !json.Valid(v) {
					t.Fatalf("change %q holds %q, not JSON", c.Path, v)
				}
			}
		}
		backward, err := DiffResource(group, resource, []byte(newDoc), []byte(oldDoc))
		if err != nil {
			t.Fatalf("the other way round: %v", err)
		}
		swapped := make([]Change, len(backward))
		for i, c := range backward {
			swapped[i] = Change{Path: c.Path, Old: c.New, New: c.Old}
		}
		if a, b := changeStrings(forward), changeStrings(swapped); !slices.Equal(a, b) {
			t.Fatalf("old to new:\n%q\nnew to old, swapped:\n%q", a, b)
		}
	})
}

func changeStrings(cs []Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Path + "\x00" + string(c.Old) + "\x00" + string(c.New)
	}
	slices.Sort(out)
	return out
}

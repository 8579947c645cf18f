package tap

import (
	"strings"
	"testing"
)

// changes renders a diff one "path: old -> new" per line, values as raw JSON.
func changes(t *testing.T, oldDoc, newDoc string) string {
	t.Helper()
	cs, err := Diff([]byte(oldDoc), []byte(newDoc))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range cs {
		o, n := "<none>", "<none>"
		if c.Old != nil {
			o = string(c.Old)
		}
		if c.New != nil {
			n = string(c.New)
		}
		lines = append(lines, c.Path+": "+o+" -> "+n)
	}
	return strings.Join(lines, "\n")
}

func TestDiff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		old, new string
		want     string
	}{
		{name: "identical", old: `{"spec":{"replicas":3}}`, new: `{"spec":{"replicas":3}}`, want: ""},
		{name: "scalar changed", old: `{"spec":{"replicas":3}}`, new: `{"spec":{"replicas":5}}`,
			want: `spec.replicas: 3 -> 5`},
		{name: "big numbers keep their digits", old: `{"a":9007199254740993}`, new: `{"a":9007199254740995}`,
			want: `a: 9007199254740993 -> 9007199254740995`},
		{name: "label added to an existing map", old: `{"metadata":{"labels":{"app":"web"}}}`, new: `{"metadata":{"labels":{"app":"web","tier":"front"}}}`,
			want: `metadata.labels.tier: <none> -> "front"`},
		{name: "labels map added", old: `{"metadata":{"name":"a"}}`, new: `{"metadata":{"name":"a","labels":{"tier":"front","app":"web"}}}`,
			want: "metadata.labels.app: <none> -> \"web\"\nmetadata.labels.tier: <none> -> \"front\""},
		{name: "labels map removed", old: `{"metadata":{"labels":{"app":"web"}}}`, new: `{"metadata":{}}`,
			want: `metadata.labels.app: "web" -> <none>`},
		{name: "empty map added", old: `{"spec":{}}`, new: `{"spec":{"selector":{}}}`,
			want: `spec.selector: <none> -> {}`},
		{name: "field removed", old: `{"spec":{"paused":true,"replicas":1}}`, new: `{"spec":{"replicas":1}}`,
			want: `spec.paused: true -> <none>`},
		{name: "null is a value", old: `{"a":null}`, new: `{"a":1}`, want: `a: null -> 1`},
		{name: "type change", old: `{"a":{"b":1}}`, new: `{"a":"flat"}`, want: `a: {"b":1} -> "flat"`},
		{name: "nested maps sorted", old: `{"z":{"b":1,"a":1},"a":1}`, new: `{"z":{"b":2,"a":2},"a":2}`,
			want: "a: 1 -> 2\nz.a: 1 -> 2\nz.b: 1 -> 2"},
		{name: "scalar list element", old: `{"args":["a","b"]}`, new: `{"args":["a","c"]}`,
			want: `args[1]: "b" -> "c"`},
		{name: "list grew", old: `{"args":["a"]}`, new: `{"args":["a","b","c"]}`,
			want: "args[1]: <none> -> \"b\"\nargs[2]: <none> -> \"c\""},
		{name: "list shrank", old: `{"ports":[{"port":80},{"port":443}]}`, new: `{"ports":[{"port":80}]}`,
			want: `ports[1]: {"port":443} -> <none>`},
		{name: "list of objects by index", old: `{"ports":[{"port":80,"protocol":"TCP"}]}`, new: `{"ports":[{"port":8080,"protocol":"TCP"}]}`,
			want: `ports[0].port: 80 -> 8080`},
		{name: "named list elements", old: `{"spec":{"containers":[{"name":"web","image":"nginx:1"},{"name":"side","image":"envoy"}]}}`,
			new:  `{"spec":{"containers":[{"name":"side","image":"envoy"},{"name":"web","image":"nginx:2"}]}}`,
			want: `spec.containers[name=web].image: "nginx:1" -> "nginx:2"`},
		{name: "named element added and removed", old: `{"c":[{"name":"a"},{"name":"b"}]}`, new: `{"c":[{"name":"b"},{"name":"c","x":1}]}`,
			want: "c[name=a]: {\"name\":\"a\"} -> <none>\nc[name=c]: <none> -> {\"name\":\"c\",\"x\":1}"},
		{name: "duplicate names fall back to index", old: `{"c":[{"name":"a","v":1},{"name":"a","v":2}]}`, new: `{"c":[{"name":"a","v":1},{"name":"a","v":3}]}`,
			want: `c[1].v: 2 -> 3`},
		{name: "list added", old: `{}`, new: `{"finalizers":["x"]}`, want: `finalizers: <none> -> ["x"]`},
		{name: "lists in lists", old: `{"m":[[1,2],[3]]}`, new: `{"m":[[1,2],[4]]}`, want: `m[1][0]: 3 -> 4`},
		{name: "bookkeeping ignored",
			old:  `{"metadata":{"resourceVersion":"5","generation":1,"managedFields":[{"manager":"a"}],"uid":"u"}}`,
			new:  `{"metadata":{"resourceVersion":"6","generation":2,"managedFields":[{"manager":"b"}],"uid":"u"}}`,
			want: ""},
		{name: "only top-level metadata is bookkeeping",
			old:  `{"spec":{"template":{"metadata":{"generation":1}}}}`,
			new:  `{"spec":{"template":{"metadata":{"generation":2}}}}`,
			want: `spec.template.metadata.generation: 1 -> 2`},
		{name: "keys needing quotes", old: `{"metadata":{"labels":{}}}`, new: `{"metadata":{"labels":{"app.kubernetes.io/name":"web","":"e"}}}`,
			want: "metadata.labels[\"\"]: <none> -> \"e\"\nmetadata.labels[\"app.kubernetes.io/name\"]: <none> -> \"web\""},
		{name: "no previous state", old: ``, new: `{"a":1}`, want: `a: <none> -> 1`},
		{name: "status added on first status write", old: `{"spec":{}}`, new: `{"spec":{},"status":{"phase":"Running","conditions":[{"type":"Ready"}]}}`,
			want: "status.conditions: <none> -> [{\"type\":\"Ready\"}]\nstatus.phase: <none> -> \"Running\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := changes(t, tt.old, tt.new); got != tt.want {
				t.Fatalf("Diff:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestDiffRejectsBadJSON(t *testing.T) {
	t.Parallel()
	if _, err := Diff([]byte(`{`), []byte(`{}`)); err == nil {
		t.Fatal("want an error for a truncated old object")
	}
	if _, err := Diff([]byte(`{}`), []byte(`nope`)); err == nil {
		t.Fatal("want an error for a new object that is not JSON")
	}
}

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

// resourceChanges is changes for an object of group/resource.
func resourceChanges(t *testing.T, group, resource, oldDoc, newDoc string) string {
	t.Helper()
	cs, err := DiffResource(group, resource, []byte(oldDoc), []byte(newDoc))
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

// TestDiffResourceMergeKeys: lists of a built-in kind are matched by
// their strategic-merge-patch merge key, so elements that only moved are
// no change.
func TestDiffResourceMergeKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		group, resource string
		old, new        string
		want            string
	}{
		{name: "conditions swapping places give only the real change", group: "apps", resource: "deployments",
			old: `{"status":{"conditions":[
				{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable"},
				{"type":"Available","status":"False","reason":"MinimumReplicasUnavailable"}]}}`,
			new: `{"status":{"conditions":[
				{"type":"Available","status":"True","reason":"MinimumReplicasUnavailable"},
				{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable"}]}}`,
			want: `status.conditions[type=Available].status: "False" -> "True"`},
		{name: "conditions that only moved are no change", group: "apps", resource: "deployments",
			old:  `{"status":{"conditions":[{"type":"Progressing","status":"True"},{"type":"Available","status":"True"}]}}`,
			new:  `{"status":{"conditions":[{"type":"Available","status":"True"},{"type":"Progressing","status":"True"}]}}`,
			want: ``},
		{name: "a condition added and one removed", group: "apps", resource: "deployments",
			old:  `{"status":{"conditions":[{"type":"Progressing","status":"True"},{"type":"ReplicaFailure","status":"True"}]}}`,
			new:  `{"status":{"conditions":[{"type":"Available","status":"True"},{"type":"Progressing","status":"True"}]}}`,
			want: "status.conditions[type=ReplicaFailure]: {\"status\":\"True\",\"type\":\"ReplicaFailure\"} -> <none>\nstatus.conditions[type=Available]: <none> -> {\"status\":\"True\",\"type\":\"Available\"}"},
		{name: "containers by name, their ports by containerPort and env by name", resource: "pods",
			old: `{"spec":{"containers":[
				{"name":"web","image":"nginx:1","ports":[{"containerPort":80,"name":"http"},{"containerPort":443,"name":"https"}],
				 "env":[{"name":"A","value":"1"},{"name":"MODE","value":"dev"}]},
				{"name":"side","image":"envoy"}]}}`,
			new: `{"spec":{"containers":[
				{"name":"side","image":"envoy"},
				{"name":"web","image":"nginx:2","ports":[{"containerPort":443,"name":"tls"},{"containerPort":80,"name":"http"}],
				 "env":[{"name":"MODE","value":"prod"},{"name":"A","value":"1"}]}]}}`,
			want: "spec.containers[name=web].env[name=MODE].value: \"dev\" -> \"prod\"\n" +
				"spec.containers[name=web].image: \"nginx:1\" -> \"nginx:2\"\n" +
				"spec.containers[name=web].ports[containerPort=443].name: \"https\" -> \"tls\""},
		{name: "a port added by containerPort", resource: "pods",
			old:  `{"spec":{"containers":[{"name":"web","ports":[{"containerPort":80}]}]}}`,
			new:  `{"spec":{"containers":[{"name":"web","ports":[{"containerPort":8080},{"containerPort":80}]}]}}`,
			want: `spec.containers[name=web].ports[containerPort=8080]: <none> -> {"containerPort":8080}`},
		{name: "a merge key that is not unique falls back to the index", resource: "pods",
			old:  `{"spec":{"containers":[{"name":"dns","ports":[{"containerPort":53,"protocol":"UDP"},{"containerPort":53,"protocol":"TCP","hostPort":53}]}]}}`,
			new:  `{"spec":{"containers":[{"name":"dns","ports":[{"containerPort":53,"protocol":"UDP"},{"containerPort":53,"protocol":"TCP","hostPort":5353}]}]}}`,
			want: `spec.containers[name=dns].ports[1].hostPort: 53 -> 5353`},
		{name: "service ports by port", resource: "services",
			old:  `{"spec":{"ports":[{"port":80,"targetPort":8080},{"port":443,"targetPort":8443}]}}`,
			new:  `{"spec":{"ports":[{"port":443,"targetPort":9443},{"port":80,"targetPort":8080}]}}`,
			want: `spec.ports[port=443].targetPort: 8443 -> 9443`},
		{name: "volumes by name", resource: "pods",
			old:  `{"spec":{"volumes":[{"name":"a","emptyDir":{}},{"name":"b","configMap":{"name":"x"}}]}}`,
			new:  `{"spec":{"volumes":[{"name":"b","configMap":{"name":"y"}},{"name":"a","emptyDir":{}}]}}`,
			want: `spec.volumes[name=b].configMap.name: "x" -> "y"`},
		{name: "node addresses by type", resource: "nodes",
			old:  `{"status":{"addresses":[{"type":"Hostname","address":"n1"},{"type":"InternalIP","address":"10.0.0.1"}]}}`,
			new:  `{"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.2"},{"type":"Hostname","address":"n1"}]}}`,
			want: `status.addresses[type=InternalIP].address: "10.0.0.1" -> "10.0.0.2"`},
		{name: "owner references by uid", group: "apps", resource: "replicasets",
			old:  `{"metadata":{"ownerReferences":[{"uid":"u1","name":"web","controller":true},{"uid":"u2","name":"other"}]}}`,
			new:  `{"metadata":{"ownerReferences":[{"uid":"u2","name":"other"},{"uid":"u1","name":"web","controller":false}]}}`,
			want: `metadata.ownerReferences[uid=u1].controller: true -> false`},
		{name: "a list without a merge key goes by index", resource: "pods",
			old:  `{"spec":{"tolerations":[{"key":"a","operator":"Exists"},{"key":"b","operator":"Exists"}]}}`,
			new:  `{"spec":{"tolerations":[{"key":"b","operator":"Exists"},{"key":"a","operator":"Exists"}]}}`,
			want: "spec.tolerations[0].key: \"a\" -> \"b\"\nspec.tolerations[1].key: \"b\" -> \"a\""},
		{name: "a list without a merge key whose elements have unique names", resource: "pods",
			old:  `{"status":{"containerStatuses":[{"name":"a","ready":false},{"name":"b","ready":true}]}}`,
			new:  `{"status":{"containerStatuses":[{"name":"b","ready":true},{"name":"a","ready":true}]}}`,
			want: `status.containerStatuses[name=a].ready: false -> true`},
		{name: "a field the type does not have", resource: "pods",
			old:  `{"spec":{"extra":[{"type":"x","v":1},{"type":"y","v":1}]}}`,
			new:  `{"spec":{"extra":[{"type":"y","v":2},{"type":"x","v":1}]}}`,
			want: `spec.extra[type=y].v: 1 -> 2`},
		{name: "maps of the typed object are compared key by key", resource: "configmaps",
			old:  `{"data":{"a":"1"},"metadata":{"labels":{"x":"1"}}}`,
			new:  `{"data":{"a":"2"},"metadata":{"labels":{"x":"1","y":"2"}}}`,
			want: "data.a: \"1\" -> \"2\"\nmetadata.labels.y: <none> -> \"2\""},
		{name: "map values that hold lists", group: "certificates.k8s.io", resource: "certificatesigningrequests",
			old:  `{"spec":{"extra":{"scopes":["a","b"]}}}`,
			new:  `{"spec":{"extra":{"scopes":["a","c"]}}}`,
			want: `spec.extra.scopes[1]: "b" -> "c"`},
		{name: "merge key values that need quotes", resource: "pods",
			old:  `{"spec":{"containers":[{"name":"a]b","image":"x"},{"name":"c","image":"y"}]}}`,
			new:  `{"spec":{"containers":[{"name":"c","image":"y"},{"name":"a]b","image":"z"}]}}`,
			want: `spec.containers[name="a]b"].image: "x" -> "z"`},
		{name: "a custom resource falls back to a unique type", group: "example.com", resource: "widgets",
			old: `{"apiVersion":"example.com/v1","kind":"Widget","status":{"conditions":[
				{"type":"Ready","status":"False"},{"type":"Synced","status":"True"}]}}`,
			new: `{"apiVersion":"example.com/v1","kind":"Widget","status":{"conditions":[
				{"type":"Synced","status":"True"},{"type":"Ready","status":"True"}]}}`,
			want: `status.conditions[type=Ready].status: "False" -> "True"`},
		{name: "a custom resource falls back to a unique name", group: "example.com", resource: "widgets",
			old:  `{"spec":{"parts":[{"name":"a","size":1},{"name":"b","size":2}]}}`,
			new:  `{"spec":{"parts":[{"name":"b","size":3},{"name":"a","size":1}]}}`,
			want: `spec.parts[name=b].size: 2 -> 3`},
		{name: "a custom resource's types that are not strings go by index", group: "example.com", resource: "widgets",
			old:  `{"spec":{"parts":[{"type":1,"size":1},{"type":2,"size":2}]}}`,
			new:  `{"spec":{"parts":[{"type":2,"size":2},{"type":1,"size":1}]}}`,
			want: "spec.parts[0].size: 1 -> 2\nspec.parts[0].type: 1 -> 2\nspec.parts[1].size: 2 -> 1\nspec.parts[1].type: 2 -> 1"},
		{name: "a custom resource whose kind shares a name with a built-in one", group: "example.com", resource: "pods",
			old:  `{"apiVersion":"example.com/v1","kind":"Pod","spec":{"containers":[{"containerPort":1,"v":1},{"containerPort":2,"v":1}]}}`,
			new:  `{"apiVersion":"example.com/v1","kind":"Pod","spec":{"containers":[{"containerPort":2,"v":1},{"containerPort":1,"v":1}]}}`,
			want: "spec.containers[0].containerPort: 1 -> 2\nspec.containers[1].containerPort: 2 -> 1"},
		{name: "no resource: the objects' apiVersion and kind", resource: "",
			old:  `{"apiVersion":"v1","kind":"Service","spec":{"ports":[{"port":80,"name":"a"},{"port":81,"name":"b"}]}}`,
			new:  `{"apiVersion":"v1","kind":"Service","spec":{"ports":[{"port":81,"name":"b"},{"port":80,"name":"c"}]}}`,
			want: `spec.ports[port=80].name: "a" -> "c"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := resourceChanges(t, tt.group, tt.resource, tt.old, tt.new); got != tt.want {
				t.Fatalf("DiffResource(%q, %q):\n%s\nwant:\n%s", tt.group, tt.resource, got, tt.want)
			}
		})
	}
}

// TestDiffWithoutResourceUsesTheKind: Diff (no resource) goes by the
// objects' apiVersion and kind, and by the heuristics without them.
func TestDiffWithoutResourceUsesTheKind(t *testing.T) {
	t.Parallel()
	old := `{"apiVersion":"apps/v1","kind":"Deployment","status":{"conditions":[{"type":"Progressing","status":"True"},{"type":"Available","status":"False"}]}}`
	new := `{"apiVersion":"apps/v1","kind":"Deployment","status":{"conditions":[{"type":"Available","status":"True"},{"type":"Progressing","status":"True"}]}}`
	if got := changes(t, old, new); got != `status.conditions[type=Available].status: "False" -> "True"` {
		t.Fatalf("Diff of a Deployment:\n%s", got)
	}
	// The same lists without a kind: matched by the unique type too.
	old, new = strings.ReplaceAll(old, `"kind":"Deployment",`, ""), strings.ReplaceAll(new, `"kind":"Deployment",`, "")
	if got := changes(t, old, new); got != `status.conditions[type=Available].status: "False" -> "True"` {
		t.Fatalf("Diff without a kind:\n%s", got)
	}
}

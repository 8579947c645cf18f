package tap

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubebus/kubebus/bus"
)

func TestParseResource(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, group, resource string
		wantErr             bool
	}{
		{in: "", group: "", resource: ""},
		{in: "pods", group: "", resource: "pods"},
		{in: "Pods", group: "", resource: "pods"},
		{in: "po", group: "", resource: "pods"},
		{in: "pod", group: "", resource: "pods"},
		{in: "deployments", group: "apps", resource: "deployments"},
		{in: "deploy", group: "apps", resource: "deployments"},
		{in: "deployments.apps", group: "apps", resource: "deployments"},
		{in: "deployments.v1.apps", group: "apps", resource: "deployments"},
		{in: "pods.v1", group: "", resource: "pods"},
		{in: "ingresses.networking.k8s.io", group: "networking.k8s.io", resource: "ingresses"},
		{in: "apps/deployments", group: "apps", resource: "deployments"},
		{in: "core/pods", group: "", resource: "pods"},
		{in: "pods.core", group: "", resource: "pods"},
		{in: "widgets", group: "", resource: "widgets"},
		{in: "widgets.example.com", group: "example.com", resource: "widgets"},
		{in: "/pods", wantErr: true},
		{in: "apps/", wantErr: true},
		{in: "a/b/c", wantErr: true},
		{in: "pods.", wantErr: true},
		{in: ".apps", wantErr: true},
		{in: "deployments.v1.", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			g, r, err := ParseResource(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseResource(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err == nil && (g != tt.group || r != tt.resource) {
				t.Fatalf("ParseResource(%q) = %q, %q; want %q, %q", tt.in, g, r, tt.group, tt.resource)
			}
		})
	}
}

func TestParseTypes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    map[bus.EventType]bool
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "ADDED", want: map[bus.EventType]bool{bus.Added: true}},
		{in: "modified, deleted", want: map[bus.EventType]bool{bus.Modified: true, bus.Deleted: true}},
		{in: "ADDED,BOOKMARK", wantErr: true},
		{in: "GAP", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseTypes(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFilterSubjects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    Filter
		want string
	}{
		{name: "everything", f: Filter{}, want: "kube.*.*.*.*"},
		{name: "core resource", f: Filter{Resource: "pods"}, want: "kube.core.pods.*.*"},
		{name: "group resource", f: Filter{Group: "networking.k8s.io", Resource: "ingresses"}, want: "kube.networking%2Ek8s%2Eio.ingresses.*.*"},
		{name: "namespace only", f: Filter{Namespace: "default"}, want: "kube.*.*.default.*"},
		{name: "name with a dot", f: Filter{Resource: "nodes", Name: "node-1.example"}, want: "kube.core.nodes.*.node-1%2Eexample"},
		{name: "everything narrowed", f: Filter{Group: "apps", Resource: "deployments", Namespace: "prod", Name: "web"}, want: "kube.apps.deployments.prod.web"},
		{name: "labels and types stay client side", f: Filter{Types: map[bus.EventType]bool{bus.Added: true}, MinRevision: 4}, want: "kube.*.*.*.*"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.f.Subjects()
			if want := []string{tt.want, bus.GapSubject}; !reflect.DeepEqual(got, want) {
				t.Fatalf("Subjects() = %q, want %q", got, want)
			}
		})
	}
}

func obj(labels map[string]string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"name": "x", "labels": labels}})
	return b
}

func TestFilterMatch(t *testing.T) {
	t.Parallel()
	web := obj(map[string]string{"app": "web", "tier": "front"})
	db := obj(map[string]string{"app": "db"})
	sel := func(s string) labels.Selector {
		l, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	pod := func(typ bus.EventType, rev int64, o, prev json.RawMessage) *bus.Event {
		return &bus.Event{Type: typ, Revision: rev, Resource: "pods", Namespace: "default", Name: "p1", Object: o, Previous: prev}
	}
	gap := &bus.Event{Type: bus.Gap, Revision: 20, From: 11, To: 20}
	tests := []struct {
		name string
		f    Filter
		ev   *bus.Event
		want bool
	}{
		{name: "zero filter", f: Filter{}, ev: pod(bus.Added, 1, web, nil), want: true},
		{name: "type kept", f: Filter{Types: map[bus.EventType]bool{bus.Added: true}}, ev: pod(bus.Added, 1, web, nil), want: true},
		{name: "type dropped", f: Filter{Types: map[bus.EventType]bool{bus.Deleted: true}}, ev: pod(bus.Added, 1, web, nil), want: false},
		{name: "gap ignores types", f: Filter{Types: map[bus.EventType]bool{bus.Deleted: true}}, ev: gap, want: true},
		{name: "gap ignores resource", f: Filter{Resource: "nodes"}, ev: gap, want: true},
		{name: "gap before since", f: Filter{MinRevision: 21}, ev: gap, want: false},
		{name: "gap straddling since", f: Filter{MinRevision: 15}, ev: gap, want: true},
		{name: "before since", f: Filter{MinRevision: 5}, ev: pod(bus.Added, 4, web, nil), want: false},
		{name: "at since", f: Filter{MinRevision: 5}, ev: pod(bus.Added, 5, web, nil), want: true},
		{name: "resource", f: Filter{Resource: "pods"}, ev: pod(bus.Added, 1, web, nil), want: true},
		{name: "other group", f: Filter{Group: "apps", Resource: "pods"}, ev: pod(bus.Added, 1, web, nil), want: false},
		{name: "namespace", f: Filter{Namespace: "kube-system"}, ev: pod(bus.Added, 1, web, nil), want: false},
		{name: "name", f: Filter{Name: "p2"}, ev: pod(bus.Added, 1, web, nil), want: false},
		{name: "selector matches", f: Filter{Selector: sel("app=web")}, ev: pod(bus.Added, 1, web, nil), want: true},
		{name: "selector set-based", f: Filter{Selector: sel("app in (web,api),tier!=db")}, ev: pod(bus.Added, 1, web, nil), want: true},
		{name: "selector misses", f: Filter{Selector: sel("app=web")}, ev: pod(bus.Added, 1, db, nil), want: false},
		{name: "selector on deleted last state", f: Filter{Selector: sel("app=db")}, ev: pod(bus.Deleted, 1, db, nil), want: true},
		{name: "selector matches previous", f: Filter{Selector: sel("app=web")}, ev: pod(bus.Modified, 2, db, web), want: true},
		{name: "selector misses both", f: Filter{Selector: sel("app=api")}, ev: pod(bus.Modified, 2, db, web), want: false},
		{name: "empty selector", f: Filter{Selector: labels.Everything()}, ev: pod(bus.Added, 1, []byte(`{}`), nil), want: true},
		{name: "no labels", f: Filter{Selector: sel("app")}, ev: pod(bus.Added, 1, []byte(`{"metadata":{}}`), nil), want: false},
		{name: "negative on no labels", f: Filter{Selector: sel("!app")}, ev: pod(bus.Added, 1, []byte(`{"metadata":{}}`), nil), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.f.Match(tt.ev); got != tt.want {
				t.Fatalf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}

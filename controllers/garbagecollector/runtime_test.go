package garbagecollector

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
)

// newIdle is a collector whose informers never run (they have no bus).
func newIdle(t *testing.T) *GC {
	t.Helper()
	g, err := New(Config{JetStream: struct{ jetstream.JetStream }{}, Client: struct{ metadata.Interface }{}, Resources: []Resource{configMaps, secrets}})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestRuntimeResources(t *testing.T) {
	t.Parallel()
	widgets := Resource{Group: "example.com", Version: "v1", Resource: "widgets", Kind: "Widget", Namespaced: true}
	widgetsV2 := widgets
	widgetsV2.Version = "v2"
	clusterWidgets := widgets
	clusterWidgets.Namespaced = false
	otherPlural := widgets
	otherPlural.Resource = "things"
	type step struct {
		add     *Resource // or
		remove  *Resource
		wantErr bool
	}
	tests := []struct {
		name  string
		steps []step
		want  []Resource // watched at the end, besides the built-in ones
		gone  []Resource // not watched at the end
	}{
		{name: "add", steps: []step{{add: &widgets}}, want: []Resource{widgets}},
		{name: "add twice", steps: []step{{add: &widgets}, {add: &widgets}}, want: []Resource{widgets}},
		{name: "add and remove", steps: []step{{add: &widgets}, {remove: &widgets}}, gone: []Resource{widgets}},
		{name: "a new version: remove, then add", steps: []step{{add: &widgets}, {remove: &widgets}, {add: &widgetsV2}},
			want: []Resource{widgetsV2}, gone: []Resource{widgets}},
		{name: "a new version without removing the old one", steps: []step{{add: &widgets}, {add: &widgetsV2, wantErr: true}},
			want: []Resource{widgets}, gone: []Resource{widgetsV2}},
		{name: "the same resource otherwise scoped", steps: []step{{add: &widgets}, {add: &clusterWidgets, wantErr: true}},
			want: []Resource{widgets}},
		{name: "the kind under another plural", steps: []step{{add: &widgets}, {add: &otherPlural, wantErr: true}},
			want: []Resource{widgets}, gone: []Resource{otherPlural}},
		{name: "removing another than was added", steps: []step{{add: &widgets}, {remove: &clusterWidgets}}, want: []Resource{widgets}},
		{name: "a built-in resource cannot be added", steps: []step{{add: &Resource{Version: "v1", Resource: "configmaps", Kind: "Widget"}, wantErr: true}}},
		{name: "a built-in kind cannot be added", steps: []step{{add: &Resource{Group: "", Version: "v2", Resource: "cms", Kind: "ConfigMap"}, wantErr: true}}},
		{name: "a built-in resource is not removed", steps: []step{{remove: &configMaps}}},
		{name: "a resource without a kind", steps: []step{{add: &Resource{Group: "example.com", Version: "v1", Resource: "widgets"}, wantErr: true}},
			gone: []Resource{widgets}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newIdle(t)
			for i, s := range tt.steps {
				if s.remove != nil {
					g.RemoveResource(*s.remove)
					continue
				}
				if err := g.AddResource(*s.add); (err != nil) != s.wantErr {
					t.Fatalf("step %d: AddResource(%v) = %v, want an error: %v", i, s.add, err, s.wantErr)
				}
			}
			for _, r := range append([]Resource{configMaps, secrets}, tt.want...) {
				if g.Informer(r.GVR()) == nil {
					t.Errorf("%s is not watched", r)
				}
				if w := g.lookup(r.GroupKind()); w == nil || w.res != r {
					t.Errorf("kind %s is not watched as %v", r.GroupKind(), r)
				}
			}
			for _, r := range tt.gone {
				if g.Informer(r.GVR()) != nil {
					t.Errorf("%s is watched", r)
				}
			}
			g.mu.RLock()
			n := len(g.watched)
			g.mu.RUnlock()
			if want := 2 + len(tt.want); n != want {
				t.Errorf("%d resources watched, want %d", n, want)
			}
			if got := len(g.Caches()); got != 3 {
				t.Errorf("%d caches, want the 2 built-in ones and the runtime one", got)
			}
		})
	}
}

// TestRuntimeCacheRunsOnce: the runtime cache runs until its context ends,
// once, and counts as synced.
func TestRuntimeCacheRunsOnce(t *testing.T) {
	t.Parallel()
	g := newIdle(t)
	caches := g.Caches()
	rc := caches[len(caches)-1]
	if !rc.HasSynced() {
		t.Fatal("the runtime cache is not synced")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rc.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if err := rc.Run(context.Background()); !errors.Is(err, errRuntimeRunning) {
		t.Fatalf("a second Run = %v, want %v", err, errRuntimeRunning)
	}
	// Added after the cache stopped: recorded, not started.
	r := Resource{Group: "example.com", Version: "v1", Resource: "widgets", Kind: "Widget", Namespaced: true}
	if err := g.AddResource(r); err != nil {
		t.Fatal(err)
	}
	g.RemoveResource(r)
	if g.Informer(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}) != nil {
		t.Fatal("widgets are still watched")
	}
}

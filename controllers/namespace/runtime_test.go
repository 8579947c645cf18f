package namespace

import (
	"slices"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/metadata"

	"github.com/kubebus/kubebus/bus/informer"
)

// names lists a namespace's objects by name.
type names []string

func (n names) ListNamespace(string) []*metav1.PartialObjectMetadata {
	out := make([]*metav1.PartialObjectMetadata, 0, len(n))
	for _, name := range n {
		out = append(out, obj(name))
	}
	return out
}

// newIdle is a controller that never runs: its informer has no bus.
func newIdle(t *testing.T, res ...Resource) *Controller {
	t.Helper()
	nss, err := informer.New(informer.Config[*corev1.Namespace]{JetStream: struct{ jetstream.JetStream }{}, Component: "t", Resource: "namespaces",
		New: func() *corev1.Namespace { return &corev1.Namespace{} }})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Namespaces: nss, Resources: res, Client: fake.NewClientset(), Metadata: struct{ metadata.Interface }{}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRuntimeResources(t *testing.T) {
	t.Parallel()
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	gadgets := schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "gadgets"}
	type step struct {
		add     *Resource // or
		remove  schema.GroupVersionResource
		wantErr bool
	}
	tests := []struct {
		name  string
		steps []step
		want  []schema.GroupVersionResource
		// objects the pass would see of widgets
		widgetObjects int
	}{
		{name: "built-in only", want: []schema.GroupVersionResource{pods}},
		{name: "add", steps: []step{{add: &Resource{GVR: widgets, Objects: names{"a"}}}},
			want: []schema.GroupVersionResource{pods, widgets}, widgetObjects: 1},
		{name: "add again replaces the cache", steps: []step{
			{add: &Resource{GVR: widgets, Objects: names{"a"}}},
			{add: &Resource{GVR: widgets, Objects: names{"a", "b"}}},
		}, want: []schema.GroupVersionResource{pods, widgets}, widgetObjects: 2},
		{name: "add then remove", steps: []step{
			{add: &Resource{GVR: widgets, Objects: names{"a"}}},
			{add: &Resource{GVR: gadgets, Objects: names{}}},
			{remove: widgets},
		}, want: []schema.GroupVersionResource{pods, gadgets}},
		{name: "a built-in resource cannot be added", steps: []step{
			{add: &Resource{GVR: pods, Objects: names{}}, wantErr: true},
		}, want: []schema.GroupVersionResource{pods}},
		{name: "a built-in resource is not removed", steps: []step{{remove: pods}}, want: []schema.GroupVersionResource{pods}},
		{name: "removing what was never added", steps: []step{{remove: widgets}}, want: []schema.GroupVersionResource{pods}},
		{name: "a resource without a cache", steps: []step{{add: &Resource{GVR: widgets}, wantErr: true}}, want: []schema.GroupVersionResource{pods}},
		{name: "a resource without a version", steps: []step{
			{add: &Resource{GVR: schema.GroupVersionResource{Group: "example.com", Resource: "widgets"}, Objects: names{}}, wantErr: true},
		}, want: []schema.GroupVersionResource{pods}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newIdle(t, Resource{GVR: pods, Objects: names{}})
			for i, s := range tt.steps {
				if s.add == nil {
					c.RemoveResource(s.remove)
					continue
				}
				if err := c.AddResource(*s.add); (err != nil) != s.wantErr {
					t.Fatalf("step %d: AddResource(%v) = %v, want an error: %v", i, s.add.GVR, err, s.wantErr)
				}
			}
			var got []schema.GroupVersionResource
			widgetObjects := 0
			for _, r := range c.snapshot() {
				got = append(got, r.GVR)
				if r.GVR == widgets {
					widgetObjects = len(r.Objects.ListNamespace("x"))
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("resources %v, want %v", got, tt.want)
			}
			if widgetObjects != tt.widgetObjects {
				t.Errorf("%d widgets, want %d", widgetObjects, tt.widgetObjects)
			}
		})
	}
}

// TestRuntimeResourcesSnapshot: a pass under way keeps the resources it
// started with.
func TestRuntimeResourcesSnapshot(t *testing.T) {
	t.Parallel()
	c := newIdle(t, Resource{GVR: pods, Objects: names{}})
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	if err := c.AddResource(Resource{GVR: widgets, Objects: names{"a"}}); err != nil {
		t.Fatal(err)
	}
	before := c.snapshot()
	if err := c.AddResource(Resource{GVR: widgets, Objects: names{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	c.RemoveResource(widgets)
	if len(before) != 2 || len(before[1].Objects.ListNamespace("x")) != 1 {
		t.Fatalf("the snapshot changed: %v", before)
	}
}

package kcm

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers/garbagecollector"
	"github.com/kubebus/kubebus/controllers/resourcequota"
)

// runtimeCache stands in for the metadata informer the garbage collector
// makes of a CRD's resource: remove plays a delete to its handlers.
type runtimeCache struct {
	mu       sync.Mutex
	objs     []*metav1.PartialObjectMetadata
	handlers []informer.Handler[*metav1.PartialObjectMetadata]
}

var _ garbagecollector.Objects = (*runtimeCache)(nil)

func (c *runtimeCache) Get(ns, name string) (*metav1.PartialObjectMetadata, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.objs {
		if o.Namespace == ns && o.Name == name {
			return o, true
		}
	}
	return nil, false
}

func (c *runtimeCache) ListNamespace(ns string) []*metav1.PartialObjectMetadata {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*metav1.PartialObjectMetadata
	for _, o := range c.objs {
		if o.Namespace == ns {
			out = append(out, o)
		}
	}
	return out
}

func (c *runtimeCache) AddHandler(h informer.Handler[*metav1.PartialObjectMetadata]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handlers = append(c.handlers, h)
}

func (c *runtimeCache) HasSynced() bool { return true }

func (c *runtimeCache) remove(ns, name string) {
	c.mu.Lock()
	var gone *metav1.PartialObjectMetadata
	for i, o := range c.objs {
		if o.Namespace == ns && o.Name == name {
			gone = o
			c.objs = append(c.objs[:i:i], c.objs[i+1:]...)
			break
		}
	}
	hs := append([]informer.Handler[*metav1.PartialObjectMetadata](nil), c.handlers...)
	c.mu.Unlock()
	for _, h := range hs {
		h.OnDelete(gone)
	}
}

func widgetMeta(ns, name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// waitForUsed waits until the controller writes a status whose used
// count/widgets.example.com is want.
func waitForUsed(t *testing.T, client *fake.Clientset, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var last corev1.ResourceList
	for {
		for _, a := range client.Actions() {
			if a.GetVerb() != "update" || a.GetSubresource() != "status" {
				continue
			}
			last = a.(k8stesting.UpdateAction).GetObject().(*corev1.ResourceQuota).Status.Used
			if apiequality.Semantic.DeepEqual(last, quantities("count/widgets.example.com", want)) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("used count/widgets.example.com=%s not written within 10s; last written %v", want, last)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestQuotaFollowsCRDs: the ResourceQuota controller, wired as the
// controller-manager wires it, counts the objects of a CRD Established
// after it started from the garbage collector's cache of them, and a
// delete of one releases its quota.
func TestQuotaFollowsCRDs(t *testing.T) {
	t.Parallel()
	hard := quantities("count/widgets.example.com", "3")
	// Admission charged 3 creates; one was deleted since.
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns", ResourceVersion: "1"},
		Spec:   corev1.ResourceQuotaSpec{Hard: hard},
		Status: corev1.ResourceQuotaStatus{Hard: hard, Used: quantities("count/widgets.example.com", "3")}}
	f := newQuotaFixture([]*corev1.ResourceQuota{q}, nil)
	client := fake.NewClientset(q)
	log := slog.New(slog.DiscardHandler)
	c, err := resourcequota.New(quotaConfig(f.sources, client, log))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	// The CRD is Established: the garbage collector's follower makes its
	// cache, then the quota controller's follower adds it.
	widgetCache := &runtimeCache{objs: []*metav1.PartialObjectMetadata{widgetMeta("ns", "a"), widgetMeta("ns", "b"), widgetMeta("other", "c")}}
	f.metadata[schema.GroupResource{Group: "example.com", Resource: "widgets"}] = widgetCache
	follower := newCRDFollower(quotaSink{metadata: f.sources.Metadata, c: c}, log)
	follower.sync("widgets.example.com", crd(apiextensionsv1.NamespaceScoped, version("v1", true, true)))
	waitForUsed(t, client, "2")

	widgetCache.remove("ns", "b")
	waitForUsed(t, client, "1")
}

// TestQuotaSink: cluster-scoped resources are not counted, and a
// resource the garbage collector keeps no cache of is an error.
func TestQuotaSink(t *testing.T) {
	t.Parallel()
	f := newQuotaFixture(nil, nil)
	c, err := resourcequota.New(quotaConfig(f.sources, fake.NewClientset(), slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	none := func(schema.GroupVersionResource) garbagecollector.Objects { return nil }
	if err := (quotaSink{metadata: none, c: c}).AddResource(widgets("v1", false)); err != nil {
		t.Errorf("cluster-scoped: %v", err)
	}
	if err := (quotaSink{metadata: none, c: c}).AddResource(widgets("v1", true)); err == nil {
		t.Error("no cache: want an error")
	}
	// A CRD cannot take over a built-in resource's counting.
	cms := garbagecollector.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	if err := (quotaSink{metadata: f.sources.Metadata, c: c}).AddResource(cms); err == nil {
		t.Error("a built-in resource: want an error")
	}
}

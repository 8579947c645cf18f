package kcm

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubebus/kubebus/apiserver/quota"
	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers/garbagecollector"
	"github.com/kubebus/kubebus/controllers/resourcequota"
)

// typedCache is an in-memory stand-in for a bus-fed typed informer.
type typedCache[T interface {
	runtime.Object
	metav1.Object
}] struct {
	mu   sync.Mutex
	objs []T
}

func (c *typedCache[T]) Get(ns, name string) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.objs {
		if o.GetNamespace() == ns && o.GetName() == name {
			return o, true
		}
	}
	var zero T
	return zero, false
}

func (c *typedCache[T]) List() []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]T(nil), c.objs...)
}

func (c *typedCache[T]) ListNamespace(ns string) []T {
	var out []T
	for _, o := range c.List() {
		if o.GetNamespace() == ns {
			out = append(out, o)
		}
	}
	return out
}

func (c *typedCache[T]) AddHandler(informer.Handler[T]) {}
func (c *typedCache[T]) HasSynced() bool                { return true }

// metadataView is what informer.Metadata makes of a typed cache: the
// garbage collector's view of the caches it shares (sharedMetadata).
type metadataView[T interface {
	runtime.Object
	metav1.Object
}] struct{ typed *typedCache[T] }

func (v metadataView[T]) Get(ns, name string) (*metav1.PartialObjectMetadata, bool) {
	o, ok := v.typed.Get(ns, name)
	if !ok {
		return nil, false
	}
	return asPartial(o), true
}

func (v metadataView[T]) ListNamespace(ns string) []*metav1.PartialObjectMetadata {
	var out []*metav1.PartialObjectMetadata
	for _, o := range v.typed.ListNamespace(ns) {
		out = append(out, asPartial(o))
	}
	return out
}

func (v metadataView[T]) AddHandler(informer.Handler[*metav1.PartialObjectMetadata]) {}
func (v metadataView[T]) HasSynced() bool                                            { return true }

func asPartial(o metav1.Object) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: o.GetName(), Namespace: o.GetNamespace(), UID: o.GetUID()}}
}

// The production caches fit quotaSources and the views the garbage
// collector lends.
var (
	_ resourcequota.Source[*corev1.PersistentVolumeClaim] = (*informer.Informer[*corev1.PersistentVolumeClaim])(nil)
	_ garbagecollector.Objects                            = (*informer.MetadataView[*corev1.PersistentVolumeClaim])(nil)
	_ garbagecollector.Objects                            = metadataView[*corev1.PersistentVolumeClaim]{}
)

func quantities(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// quotaFixture is the ResourceQuota controller's sources as the
// controller-manager has them: typed caches, and the garbage collector's
// metadata views, which cover the typed caches it shares (claims among
// them) and empty caches of its own for the rest.
type quotaFixture struct {
	quotas   *typedCache[*corev1.ResourceQuota]
	claims   *typedCache[*corev1.PersistentVolumeClaim]
	sources  quotaSources
	metadata map[schema.GroupResource]garbagecollector.Objects
}

func newQuotaFixture(quotas []*corev1.ResourceQuota, claims []*corev1.PersistentVolumeClaim) *quotaFixture {
	f := &quotaFixture{quotas: &typedCache[*corev1.ResourceQuota]{objs: quotas}, claims: &typedCache[*corev1.PersistentVolumeClaim]{objs: claims}}
	pods, services := &typedCache[*corev1.Pod]{}, &typedCache[*corev1.Service]{}
	f.metadata = map[schema.GroupResource]garbagecollector.Objects{}
	for _, r := range servedResources() {
		f.metadata[r.GVR().GroupResource()] = metadataView[*corev1.ConfigMap]{typed: &typedCache[*corev1.ConfigMap]{}}
	}
	// Shared by the garbage collector as metadata, as sharedMetadata does.
	f.metadata[quota.PersistentVolumeClaims] = metadataView[*corev1.PersistentVolumeClaim]{typed: f.claims}
	f.metadata[quota.Pods] = metadataView[*corev1.Pod]{typed: pods}
	f.metadata[quota.Services] = metadataView[*corev1.Service]{typed: services}
	f.metadata[schema.GroupResource{Resource: "resourcequotas"}] = metadataView[*corev1.ResourceQuota]{typed: f.quotas}
	f.sources = quotaSources{Quotas: f.quotas, Pods: pods, Services: services, Claims: f.claims,
		Metadata: func(gvr schema.GroupVersionResource) garbagecollector.Objects { return f.metadata[gvr.GroupResource()] }}
	return f
}

// TestQuotaConfigTyped: every served resource whose quota usage needs more
// than metadata reaches the controller typed, never as metadata.
func TestQuotaConfigTyped(t *testing.T) {
	t.Parallel()
	f := newQuotaFixture(nil, nil)
	cfg := quotaConfig(f.sources, fake.NewClientset(), slog.New(slog.DiscardHandler))
	if cfg.Pods == nil || cfg.Services == nil || cfg.Claims == nil {
		t.Fatalf("typed caches missing: pods %v, services %v, claims %v", cfg.Pods, cfg.Services, cfg.Claims)
	}
	for _, r := range servedResources() {
		gr := r.GVR().GroupResource()
		if !r.Namespaced {
			if _, ok := cfg.Objects[gr]; ok {
				t.Errorf("cluster-scoped %s counted", gr)
			}
			continue
		}
		_, asMetadata := cfg.Objects[gr]
		_, err := quota.Usage(gr, &metav1.PartialObjectMetadata{}, time.Unix(0, 0))
		switch {
		case err != nil && asMetadata:
			t.Errorf("%s given as metadata, but its usage needs the typed object: %v", gr, err)
		case err != nil && !resourcequota.Typed(gr):
			t.Errorf("%s needs counting typed, but the controller has no typed cache of it", gr)
		case err == nil && !asMetadata:
			t.Errorf("%s not counted", gr)
		}
	}
	if _, err := resourcequota.New(cfg); err != nil {
		t.Errorf("the controller rejects the wiring: %v", err)
	}
}

// TestQuotaConfigCountsClaims: the controller, wired as the
// controller-manager wires it, fills in the status of a quota that limits
// claims in a namespace that has some.
func TestQuotaConfigCountsClaims(t *testing.T) {
	t.Parallel()
	gold := "gold"
	hard := quantities("persistentvolumeclaims", "4", "requests.storage", "10Gi", "count/persistentvolumeclaims", "4",
		"gold.storageclass.storage.k8s.io/requests.storage", "5Gi", "configmaps", "3")
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns", ResourceVersion: "1"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	claim := func(name, size string, class *string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class,
				Resources: corev1.VolumeResourceRequirements{Requests: quantities("storage", size)}}}
	}
	f := newQuotaFixture([]*corev1.ResourceQuota{q}, []*corev1.PersistentVolumeClaim{claim("a", "1Gi", &gold), claim("b", "2Gi", nil)})
	client := fake.NewClientset(q)
	c, err := resourcequota.New(quotaConfig(f.sources, client, slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	want := corev1.ResourceQuotaStatus{Hard: hard, Used: quantities("persistentvolumeclaims", "2", "requests.storage", "3Gi",
		"count/persistentvolumeclaims", "2", "gold.storageclass.storage.k8s.io/requests.storage", "1Gi", "configmaps", "0")}
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, a := range client.Actions() {
			if a.GetVerb() != "update" || a.GetSubresource() != "status" {
				continue
			}
			got := a.(k8stesting.UpdateAction).GetObject().(*corev1.ResourceQuota).Status
			if !apiequality.Semantic.DeepEqual(got, want) {
				t.Fatalf("status = %v, want %v", got, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no quota status written within 10s: the controller could not count the claims")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

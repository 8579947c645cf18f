package resourcequota

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubebus/kubebus/controllers/garbagecollector"
)

var widgetsGR = schema.GroupResource{Group: "example.com", Resource: "widgets"}

// syncedSource is a runtime metadata cache (a CRD's, as the garbage
// collector keeps it) that reports whether it has synced.
type syncedSource struct {
	*source[*metav1.PartialObjectMetadata]
	synced atomic.Bool
}

func (s *syncedSource) HasSynced() bool { return s.synced.Load() }

func newSyncedSource(synced bool, objs ...*metav1.PartialObjectMetadata) *syncedSource {
	s := &syncedSource{source: newSource(objs...)}
	s.synced.Store(synced)
	return s
}

// The garbage collector's caches, which the controller-manager adds, fit.
var _ RuntimeSource = garbagecollector.Objects(nil)

// widgetQuota limits widgets, whose admission charged 3.
func widgetQuota() *corev1.ResourceQuota {
	return newQuota(rl("count/widgets.example.com", "3", "configmaps", "5"), rl("count/widgets.example.com", "3", "configmaps", "1"))
}

// TestRuntimeResourceReconcile: the objects of a resource added at runtime
// are counted once its cache has synced; before that, and after it is
// removed, its name keeps its value.
func TestRuntimeResourceReconcile(t *testing.T) {
	t.Parallel()
	hard := rl("count/widgets.example.com", "3", "configmaps", "5")
	f := newFixture(t, widgetQuota())
	widgets := newSyncedSource(false, newMeta("ns", "a"), newMeta("ns", "b"), newMeta("other", "c"))
	if err := f.c.AddResource(widgetsGR, widgets); err != nil {
		t.Fatal(err)
	}

	// Not synced: counted later, the value kept.
	if res := f.reconcile(t); res.RequeueAfter != SyncRetry {
		t.Errorf("not synced: requeued after %v, want %v", res.RequeueAfter, SyncRetry)
	}
	if w := f.statusWrites(); len(w) != 0 {
		t.Fatalf("not synced: wrote %v, want no write", w)
	}

	// Synced, 2 widgets then 1: the deleted one is released.
	widgets.synced.Store(true)
	widgets.remove(newMeta("ns", "b"))
	if res := f.reconcile(t); res.RequeueAfter != 0 {
		t.Errorf("synced: requeued after %v", res.RequeueAfter)
	}
	want := corev1.ResourceQuotaStatus{Hard: hard, Used: rl("count/widgets.example.com", "1", "configmaps", "1")}
	w := f.statusWrites()
	if len(w) != 1 || !apiequality.Semantic.DeepEqual(w[0], want) {
		t.Fatalf("synced: wrote %v, want %v", w, want)
	}

	// Removed (the CRD went): nothing counts it any more.
	f.c.RemoveResource(widgetsGR)
	f.quotas.set(newQuota(hard, rl("count/widgets.example.com", "2", "configmaps", "1")))
	if res := f.reconcile(t); res.RequeueAfter != 0 {
		t.Errorf("removed: requeued after %v", res.RequeueAfter)
	}
	if w := f.statusWrites(); len(w) != 1 {
		t.Errorf("removed: wrote %v, want the value kept", w[1:])
	}
}

// TestRuntimeResourceEvents: adding a resource recounts the quotas that
// limit it, its deletes replenish them, and a removed or replaced cache's
// events do nothing.
func TestRuntimeResourceEvents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		quota *corev1.ResourceQuota
		// added: look at what adding the resource queued too.
		added bool
		play  func(t *testing.T, f *fixture, widgets *syncedSource)
		want  int // keys queued
	}{
		{"added: recounted", widgetQuota(), true, func(*testing.T, *fixture, *syncedSource) {}, 1},
		{"added, quota does not limit it", newQuota(rl("pods", "10"), rl("pods", "2")), true, func(*testing.T, *fixture, *syncedSource) {}, 0},
		{"deleted", widgetQuota(), false, func(_ *testing.T, _ *fixture, w *syncedSource) { w.remove(newMeta("ns", "a")) }, 1},
		{"deleted in another namespace", widgetQuota(), false, func(_ *testing.T, _ *fixture, w *syncedSource) { w.remove(newMeta("other", "c")) }, 0},
		{"created", widgetQuota(), false, func(_ *testing.T, _ *fixture, w *syncedSource) { w.set(newMeta("ns", "new")) }, 0},
		{"removed, then deleted", widgetQuota(), false, func(_ *testing.T, f *fixture, w *syncedSource) {
			f.c.RemoveResource(widgetsGR)
			w.remove(newMeta("ns", "a"))
		}, 0},
		{"replaced: recounted", widgetQuota(), false, func(t *testing.T, f *fixture, _ *syncedSource) {
			if err := f.c.AddResource(widgetsGR, newSyncedSource(true)); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"replaced, then deleted from the old cache", widgetQuota(), false, func(t *testing.T, f *fixture, w *syncedSource) {
			if err := f.c.AddResource(widgetsGR, newSyncedSource(true)); err != nil {
				t.Fatal(err)
			}
			emptyQueue(f) // the recount replacing queued
			w.remove(newMeta("ns", "a"))
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tt.quota)
			widgets := newSyncedSource(true, newMeta("ns", "a"), newMeta("other", "c"))
			if err := f.c.AddResource(widgetsGR, widgets); err != nil {
				t.Fatal(err)
			}
			if !tt.added {
				emptyQueue(f) // the recount adding queued
			}
			tt.play(t, f, widgets)
			if got := f.c.ctrl.Len(); got != tt.want {
				t.Errorf("queued %d keys, want %d", got, tt.want)
			}
		})
	}
}

// emptyQueue drops what f's controller has queued: a term that ends at
// once leaves the next one a fresh queue (controllers.Controller.Run).
func emptyQueue(f *fixture) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.c.ctrl.Run(ctx)
}

func TestAddResourceRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, widgetQuota())
	for _, gr := range []schema.GroupResource{{Resource: "pods"}, {Resource: "persistentvolumeclaims"}, configmaps, {Group: "example.com"}} {
		if err := f.c.AddResource(gr, newSyncedSource(true)); err == nil {
			t.Errorf("AddResource(%s): want an error", gr)
		}
	}
	if err := f.c.AddResource(widgetsGR, nil); err == nil {
		t.Error("AddResource without a cache: want an error")
	}
}

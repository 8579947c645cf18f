package binder

import (
	"context"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/controllertest"
	"github.com/kubebus/kubebus/controllers/volume"
)

// lister adds List to controllertest's informer.
type lister[T runtime.Object] struct{ *controllertest.Informer[T] }

func (l lister[T]) List() []T { return l.ByLabels(labels.Everything()) }

func newLister[T runtime.Object](objs ...T) lister[T] {
	return lister[T]{controllertest.NewInformer(objs...)}
}

// fixture is a reconciler over in-memory caches seeded like the fake
// API server.
type fixture struct {
	r      *reconciler
	client *fake.Clientset
	events *record.FakeRecorder
}

func newFixture(t *testing.T, claims []*corev1.PersistentVolumeClaim, pvs []*corev1.PersistentVolume, classes ...*storagev1.StorageClass) *fixture {
	t.Helper()
	var objs []runtime.Object
	for _, c := range claims {
		objs = append(objs, c)
	}
	for _, v := range pvs {
		objs = append(objs, v)
	}
	for _, sc := range classes {
		objs = append(objs, sc)
	}
	f := &fixture{client: fake.NewClientset(objs...), events: record.NewFakeRecorder(10)}
	cfg := Config{Client: f.client, Claims: newLister(claims...), Volumes: newLister(pvs...), Classes: newLister(classes...),
		Nodes: newLister[*corev1.Node](), Recorder: f.events, Logger: slog.New(slog.DiscardHandler)}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	f.r = newReconciler(cfg)
	return f
}

func (f *fixture) sync(t *testing.T, req controllers.Request) {
	t.Helper()
	if _, err := f.r.Reconcile(context.Background(), req); err != nil {
		t.Fatalf("Reconcile %s: %v", req, err)
	}
}

func (f *fixture) claim(t *testing.T) *corev1.PersistentVolumeClaim {
	t.Helper()
	c, err := f.client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fixture) volume(t *testing.T, name string) *corev1.PersistentVolume {
	t.Helper()
	v, err := f.client.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSyncClaimBinds: a sync binds both sides with upstream's annotations
// and statuses.
func TestSyncClaimBinds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []*corev1.PersistentVolumeClaim{claim(new(""), "1Gi")}, []*corev1.PersistentVolume{pv("v", "", "5Gi")})
	f.sync(t, controllers.Request{Namespace: "ns", Name: "data"})

	v := f.volume(t, "v")
	if ref := v.Spec.ClaimRef; ref == nil || ref.Name != "data" || ref.Namespace != "ns" || ref.UID != "c1" || ref.Kind != "PersistentVolumeClaim" {
		t.Errorf("claimRef %+v", v.Spec.ClaimRef)
	}
	if v.Annotations[volume.AnnBoundByController] != "yes" || v.Status.Phase != corev1.VolumeBound {
		t.Errorf("volume annotations %v phase %s", v.Annotations, v.Status.Phase)
	}
	c := f.claim(t)
	if c.Spec.VolumeName != "v" || c.Annotations[volume.AnnBindCompleted] != "yes" || c.Annotations[volume.AnnBoundByController] != "yes" {
		t.Errorf("claim volumeName %q annotations %v", c.Spec.VolumeName, c.Annotations)
	}
	got := c.Status.Capacity[corev1.ResourceStorage]
	if c.Status.Phase != corev1.ClaimBound || got.String() != "5Gi" || len(c.Status.AccessModes) != 1 {
		t.Errorf("claim status %+v", c.Status)
	}
}

// TestSyncClaimAsksProvisioner: with a selected node and no volume, the
// claim is annotated for its class's provisioner and an Event says so.
func TestSyncClaimAsksProvisioner(t *testing.T) {
	t.Parallel()
	lp := class("local-path", "kubebus.io/local-path", storagev1.VolumeBindingWaitForFirstConsumer)
	f := newFixture(t, []*corev1.PersistentVolumeClaim{claim(new("local-path"), "1Gi", selectedNode("n1"))}, nil, lp)
	f.sync(t, controllers.Request{Namespace: "ns", Name: "data"})
	c := f.claim(t)
	if c.Annotations[volume.AnnStorageProvisioner] != "kubebus.io/local-path" || c.Annotations[volume.AnnBetaStorageProvisioner] != "kubebus.io/local-path" {
		t.Errorf("annotations %v", c.Annotations)
	}
	if ev := <-f.events.Events; ev[:len("Normal ExternalProvisioning")] != "Normal ExternalProvisioning" {
		t.Errorf("event %q", ev)
	}
}

// TestSyncVolumeReclaims: a volume whose claim is gone is Released, then
// deleted under the Delete policy.
func TestSyncVolumeReclaims(t *testing.T) {
	t.Parallel()
	v := pv("v", "", "1Gi", claimedBy("ns", "gone", "g1"), func(v *corev1.PersistentVolume) {
		v.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
	})
	f := newFixture(t, nil, []*corev1.PersistentVolume{v})
	f.sync(t, controllers.Request{Name: "v"})
	released := f.volume(t, "v")
	if released.Status.Phase != corev1.VolumeReleased {
		t.Fatalf("phase %s, want Released", released.Status.Phase)
	}
	f.r.volumes.(lister[*corev1.PersistentVolume]).Set(released)
	f.sync(t, controllers.Request{Name: "v"})
	if _, err := f.client.CoreV1().PersistentVolumes().Get(context.Background(), "v", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("volume not deleted: %v", err)
	}
}

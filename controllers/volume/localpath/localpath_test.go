package localpath

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/controllertest"
)

type lister[T runtime.Object] struct{ *controllertest.Informer[T] }

func (l lister[T]) List() []T { return l.ByLabels(labels.Everything()) }

// TestReconcile: a claim the binder handed over gets its volume, once,
// with Provisioning and ProvisioningSucceeded Events; the default class is
// created when missing.
func TestReconcile(t *testing.T) {
	t.Parallel()
	c := claim()
	client := fake.NewClientset(c)
	events := record.NewFakeRecorder(10)
	volumes := lister[*corev1.PersistentVolume]{controllertest.NewInformer[*corev1.PersistentVolume]()}
	cfg := Config{Client: client, Claims: lister[*corev1.PersistentVolumeClaim]{controllertest.NewInformer(c)}, Volumes: volumes,
		Classes: lister[*storagev1.StorageClass]{controllertest.NewInformer(DefaultClass())}, Root: "/r", Recorder: events,
		Logger: slog.New(slog.DiscardHandler)}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	r := &reconciler{cfg: cfg, log: cfg.Logger}
	ctx := context.Background()
	req := controllers.Request{Namespace: "db", Name: "data"}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, "pvc-1234", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.HostPath.Path != "/r/pvc-1234_db_data" {
		t.Errorf("path %q", pv.Spec.HostPath.Path)
	}
	for _, want := range []string{"Normal Provisioning", "Normal ProvisioningSucceeded Successfully provisioned volume pvc-1234"} {
		if ev := <-events.Events; !strings.HasPrefix(ev, want) {
			t.Errorf("event %q, want %q", ev, want)
		}
	}
	// Once the cache shows the volume, nothing more is made.
	volumes.Set(pv)
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if n := len(client.Actions()); n != 2 {
		t.Errorf("%d API actions, want 2 (get, create): %v", n, client.Actions())
	}

	r.ensureDefaultClass(ctx)
	sc, err := client.StorageV1().StorageClasses().Get(ctx, DefaultClassName, metav1.GetOptions{})
	if err != nil || sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" {
		t.Fatalf("default class %+v %v", sc, err)
	}
	r.ensureDefaultClass(ctx) // exists: returns at once
}

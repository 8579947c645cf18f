package protection

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/controllertest"
	"github.com/kubebus/kubebus/controllers/volume"
)

type lister[T runtime.Object] struct{ *controllertest.Informer[T] }

func (l lister[T]) List() []T { return l.ByLabels(labels.Everything()) }

// TestSync: a finalizer is added where missing; a claim being deleted
// keeps it while a scheduled pod uses the claim; a volume being deleted
// keeps it while Bound.
func TestSync(t *testing.T) {
	t.Parallel()
	deleting := new(metav1.Now())
	claim := func(name string, finalizers []string, del bool) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Finalizers: finalizers}}
		if del {
			c.DeletionTimestamp = deleting
		}
		return c
	}
	pv := func(name string, phase corev1.PersistentVolumePhase, finalizers []string, del bool) *corev1.PersistentVolume {
		v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}, Status: corev1.PersistentVolumeStatus{Phase: phase}}
		if del {
			v.DeletionTimestamp = deleting
		}
		return v
	}
	pvc, pvp := []string{volume.PVCProtectionFinalizer}, []string{volume.PVProtectionFinalizer}
	user := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "user"}, Spec: corev1.PodSpec{NodeName: "n1",
		Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "used"}}}}}}
	claims := []*corev1.PersistentVolumeClaim{claim("new", nil, false), claim("used", pvc, true), claim("free", pvc, true)}
	volumes := []*corev1.PersistentVolume{pv("new", corev1.VolumeAvailable, nil, false), pv("bound", corev1.VolumeBound, pvp, true),
		pv("released", corev1.VolumeReleased, pvp, true)}
	var objs []runtime.Object
	for _, c := range claims {
		objs = append(objs, c)
	}
	for _, v := range volumes {
		objs = append(objs, v)
	}
	client := fake.NewClientset(append(objs, user)...)
	r := &reconciler{cfg: Config{Client: client, Claims: lister[*corev1.PersistentVolumeClaim]{controllertest.NewInformer(claims...)},
		Volumes: lister[*corev1.PersistentVolume]{controllertest.NewInformer(volumes...)},
		Pods:    lister[*corev1.Pod]{controllertest.NewInformer(user)}}, log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	for _, req := range []controllers.Request{{Namespace: "ns", Name: "new"}, {Namespace: "ns", Name: "used"}, {Namespace: "ns", Name: "free"},
		{Name: "new"}, {Name: "bound"}, {Name: "released"}} {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatalf("Reconcile %s: %v", req, err)
		}
	}
	for name, want := range map[string][]string{"new": pvc, "used": pvc, "free": nil} {
		c, err := client.CoreV1().PersistentVolumeClaims("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.Finalizers, want) {
			t.Errorf("claim %s finalizers %v, want %v", name, c.Finalizers, want)
		}
	}
	for name, want := range map[string][]string{"new": pvp, "bound": pvp, "released": nil} {
		v, err := client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(v.Finalizers, want) {
			t.Errorf("volume %s finalizers %v, want %v", name, v.Finalizers, want)
		}
	}
}

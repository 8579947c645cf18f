package volume_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/controllers/volume"
	"github.com/kubebus/kubebus/controllers/volume/binder"
	"github.com/kubebus/kubebus/controllers/volume/localpath"
	"github.com/kubebus/kubebus/controllers/volume/protection"
	"github.com/kubebus/kubebus/test/harness"
)

// startControllers runs the binder, the local-path provisioner and the
// protection controller on bus-fed caches until the test ends.
func startControllers(t *testing.T, s *harness.Server, root string) kubernetes.Interface {
	t.Helper()
	cs := s.Clientset(t)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	nc, js := s.BusConnect(t, "system:kube-controller-manager")
	inf, err := cache.New(cache.Config{JetStream: js, Component: "test-kcm", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rec, stopRec := controllers.Recorder(ctx, cs, "persistentvolume-controller")
	provRec, stopProvRec := controllers.Recorder(ctx, cs, localpath.Provisioner)
	b, err := binder.New(binder.Config{Client: cs, Volumes: inf.PersistentVolumes, Claims: inf.PersistentVolumeClaims,
		Classes: inf.StorageClasses, Nodes: inf.Nodes, Recorder: rec, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	p, err := localpath.New(localpath.Config{Client: cs, Claims: inf.PersistentVolumeClaims, Volumes: inf.PersistentVolumes,
		Classes: inf.StorageClasses, Root: root, Recorder: provRec, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	pcfg := protection.Config{Client: cs, Claims: inf.PersistentVolumeClaims, Volumes: inf.PersistentVolumes, Pods: inf.Pods, Logger: logger}
	pvcp, err := protection.NewClaims(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	pvp, err := protection.NewVolumes(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	m := &controllers.Manager{Client: cs, Lease: controllers.LeaseConfig{Disabled: true}, Logger: logger}
	m.AddCache(inf)
	m.Add(b)
	m.Add(p)
	m.Add(pvcp)
	m.Add(pvp)
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		stopRec()
		stopProvRec()
		nc.Close()
	})
	return cs
}

func newClaim(ns, name string, class *string, size string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}},
	}
}

func newVolume(name, class, size string, policy corev1.PersistentVolumeReclaimPolicy) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{StorageClassName: class, PersistentVolumeReclaimPolicy: policy,
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/" + name}}},
	}
}

func waitClaim(t *testing.T, cs kubernetes.Interface, ns, name string, ok func(*corev1.PersistentVolumeClaim) error) *corev1.PersistentVolumeClaim {
	t.Helper()
	var c *corev1.PersistentVolumeClaim
	harness.Eventually(t, 30*time.Second, func() error {
		var err error
		if c, err = cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			return err
		}
		return ok(c)
	})
	return c
}

func boundTo(volumeName string) func(*corev1.PersistentVolumeClaim) error {
	return func(c *corev1.PersistentVolumeClaim) error {
		if c.Status.Phase != corev1.ClaimBound || (volumeName != "" && c.Spec.VolumeName != volumeName) {
			return fmt.Errorf("claim %s phase %s volume %q", c.Name, c.Status.Phase, c.Spec.VolumeName)
		}
		return nil
	}
}

func volumePhase(t *testing.T, cs kubernetes.Interface, name string, want corev1.PersistentVolumePhase) *corev1.PersistentVolume {
	t.Helper()
	var pv *corev1.PersistentVolume
	harness.Eventually(t, 30*time.Second, func() error {
		var err error
		if pv, err = cs.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			return err
		}
		if pv.Status.Phase != want {
			return fmt.Errorf("volume %s phase %s, want %s", name, pv.Status.Phase, want)
		}
		return nil
	})
	return pv
}

func gone(t *testing.T, get func() error) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, func() error {
		if err := get(); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
}

// eventFor waits for an Event of reason about the claim.
func eventFor(t *testing.T, cs kubernetes.Interface, ns, claim, reason string) *corev1.Event {
	t.Helper()
	var found *corev1.Event
	harness.Eventually(t, 30*time.Second, func() error {
		list, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", claim).String()})
		if err != nil {
			return err
		}
		var reasons []string
		for i, e := range list.Items {
			if e.Reason == reason {
				found = &list.Items[i]
				return nil
			}
			reasons = append(reasons, e.Reason)
		}
		return fmt.Errorf("no %s Event for %s (have %v)", reason, claim, reasons)
	})
	return found
}

// TestIntegrationVolumes: the default StorageClass appears; a class-less
// claim gets it and waits for its first consumer; once a node is selected
// a node-pinned hostPath volume is provisioned and bound; pre-created
// volumes bind to class-less and Immediate-class claims; a claim in use by
// a pod stays until the pod is gone; reclaim deletes or retains.
func TestIntegrationVolumes(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", "--disable-controller-manager", "--disable-scheduler", harness.NoServiceAccounts)
	cs := startControllers(t, s, "/data/storage")
	ctx := context.Background()
	const ns = "default"

	// The default class.
	var sc *storagev1.StorageClass
	harness.Eventually(t, 30*time.Second, func() error {
		var err error
		sc, err = cs.StorageV1().StorageClasses().Get(ctx, localpath.DefaultClassName, metav1.GetOptions{})
		return err
	})
	if sc.Provisioner != localpath.Provisioner || !volume.IsDefaultClass(sc) || !volume.IsWaitForFirstConsumer(sc) ||
		*sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Fatalf("default class %+v", sc)
	}

	// A class-less claim gets the default class and waits for a consumer.
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, newClaim(ns, "data", nil, "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := waitClaim(t, cs, ns, "data", func(c *corev1.PersistentVolumeClaim) error {
		if volume.ClaimClass(c) != localpath.DefaultClassName || !volume.HasFinalizer(c.Finalizers, volume.PVCProtectionFinalizer) {
			return fmt.Errorf("class %q finalizers %v", volume.ClaimClass(c), c.Finalizers)
		}
		return nil
	})
	eventFor(t, cs, ns, "data", "WaitForFirstConsumer")
	if c.Status.Phase != corev1.ClaimPending || c.Spec.VolumeName != "" {
		t.Fatalf("claim %s bound to %q before a consumer", c.Status.Phase, c.Spec.VolumeName)
	}

	// The scheduler selects a node: provisioned on it, then bound.
	c.Annotations = map[string]string{volume.AnnSelectedNode: "node-a"}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c = waitClaim(t, cs, ns, "data", boundTo("pvc-"+string(c.UID)))
	eventFor(t, cs, ns, "data", "ProvisioningSucceeded")
	pv := volumePhase(t, cs, c.Spec.VolumeName, corev1.VolumeBound)
	want := fmt.Sprintf("/data/storage/%s_%s_data", pv.Name, ns)
	if pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != want || pv.Annotations[volume.AnnProvisionedBy] != localpath.Provisioner ||
		!volume.HasFinalizer(pv.Finalizers, volume.PVProtectionFinalizer) || pv.Spec.ClaimRef.UID != c.UID ||
		pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != "node-a" {
		t.Fatalf("provisioned volume %+v", pv)
	}
	if c.Annotations[volume.AnnBindCompleted] != "yes" || c.Status.Capacity.Storage().String() != "1Gi" {
		t.Errorf("bound claim annotations %v capacity %v", c.Annotations, c.Status.Capacity)
	}

	// A pod on a node uses the claim: deleting the claim leaves it
	// Terminating until the pod is gone; then the provisioned volume (Delete)
	// is released and deleted.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "user"}, Spec: corev1.PodSpec{NodeName: "node-a",
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitClaim(t, cs, ns, "data", func(c *corev1.PersistentVolumeClaim) error {
		if c.DeletionTimestamp == nil {
			return fmt.Errorf("not being deleted")
		}
		return nil
	})
	// Stays while the pod runs. A marker claim created after the deletion
	// goes through the same protection queue: once it has its finalizer,
	// the deleted claim (enqueued before it) has been seen, and kept.
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, newClaim(ns, "marker", new(localpath.DefaultClassName), "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitClaim(t, cs, ns, "marker", func(c *corev1.PersistentVolumeClaim) error {
		if !volume.HasFinalizer(c.Finalizers, volume.PVCProtectionFinalizer) {
			return fmt.Errorf("marker finalizers %v", c.Finalizers)
		}
		return nil
	})
	if c, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{}); err != nil || !volume.HasFinalizer(c.Finalizers, volume.PVCProtectionFinalizer) {
		t.Fatalf("claim in use by a pod went: %v", err)
	}
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "user", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
		t.Fatal(err)
	}
	gone(t, func() error {
		_, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
		return err
	})
	gone(t, func() error {
		_, err := cs.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		return err
	})

	// A pre-created volume binds a claim with no class ("").
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, newVolume("static", "", "2Gi", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	volumePhase(t, cs, "static", corev1.VolumeAvailable)
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, newClaim(ns, "plain", new(""), "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitClaim(t, cs, ns, "plain", boundTo("static"))
	volumePhase(t, cs, "static", corev1.VolumeBound)

	// An Immediate class without a provisioner: a claim waits until a
	// matching volume is created, then binds.
	manual := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "manual"}, Provisioner: "kubernetes.io/no-provisioner"}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, manual, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, newClaim(ns, "fast", new("manual"), "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := eventFor(t, cs, ns, "fast", "ExternalProvisioning")
	if !strings.Contains(ev.Message, "kubernetes.io/no-provisioner") {
		t.Errorf("event message %q", ev.Message)
	}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, newVolume("manual-1", "manual", "1Gi", corev1.PersistentVolumeReclaimRetain), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitClaim(t, cs, ns, "fast", boundTo("manual-1"))

	// Retain keeps the volume Released when its claim goes; a claim not in
	// use goes at once.
	if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "fast", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone(t, func() error {
		_, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "fast", metav1.GetOptions{})
		return err
	})
	volumePhase(t, cs, "manual-1", corev1.VolumeReleased)

	// A volume being deleted while Bound stays until its claim goes.
	if err := cs.CoreV1().PersistentVolumes().Delete(ctx, "static", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if pv := volumePhase(t, cs, "static", corev1.VolumeBound); pv.DeletionTimestamp == nil {
		t.Fatal("static is not being deleted")
	}
	if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "plain", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone(t, func() error {
		_, err := cs.CoreV1().PersistentVolumes().Get(ctx, "static", metav1.GetOptions{})
		return err
	})
}

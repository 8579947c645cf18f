package apiserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/kubebus/kubebus/test/harness"
)

// TestIntegrationServerSideApply drives server-side apply through
// client-go's apply configurations against `kubebus server`: create by
// apply, shared and conflicting ownership, force, status apply, dry run,
// and the field sets updates record.
func TestIntegrationServerSideApply(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "")
	cs := s.Clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const ns = "default"
	harness.Eventually(t, 30*time.Second, func() error {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err
	})
	cms := cs.CoreV1().ConfigMaps(ns)

	// Apply creates the object and owns what it set.
	cm, err := cms.Apply(ctx, corev1ac.ConfigMap("ssa", ns).WithData(map[string]string{"a": "1", "b": "2"}), metav1.ApplyOptions{FieldManager: "alice"})
	if err != nil {
		t.Fatalf("apply create: %v", err)
	}
	if cm.Data["a"] != "1" || cm.UID == "" {
		t.Fatalf("created %+v", cm)
	}
	assertOwns(t, cm.ManagedFields, "alice", metav1.ManagedFieldsOperationApply, "", "f:data", "f:a", "f:b")

	// The same value from another manager is shared; a different one conflicts.
	if _, err := cms.Apply(ctx, corev1ac.ConfigMap("ssa", ns).WithData(map[string]string{"a": "1"}), metav1.ApplyOptions{FieldManager: "bob"}); err != nil {
		t.Fatalf("shared apply: %v", err)
	}
	_, err = cms.Apply(ctx, corev1ac.ConfigMap("ssa", ns).WithData(map[string]string{"b": "3"}), metav1.ApplyOptions{FieldManager: "bob"})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `"alice"`) || !strings.Contains(err.Error(), ".data.b") {
		t.Fatalf("conflicting apply: want a 409 naming alice and .data.b, got %v", err)
	}
	cm, err = cms.Apply(ctx, corev1ac.ConfigMap("ssa", ns).WithData(map[string]string{"b": "3"}), metav1.ApplyOptions{FieldManager: "bob", Force: true})
	if err != nil {
		t.Fatalf("forced apply: %v", err)
	}
	if cm.Data["b"] != "3" {
		t.Fatalf("forced apply left b=%q", cm.Data["b"])
	}
	assertOwns(t, cm.ManagedFields, "bob", metav1.ManagedFieldsOperationApply, "", "f:b")
	// bob's configuration no longer names a: it stays (alice owns it).
	if cm.Data["a"] != "1" {
		t.Fatalf("a=%q after bob's apply", cm.Data["a"])
	}

	// An update records the fields it changed, as an Update.
	cm.Data["c"] = "4"
	cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	assertOwns(t, cm.ManagedFields, "carol", metav1.ManagedFieldsOperationUpdate, "", "f:c")
	if last := cm.ManagedFields[len(cm.ManagedFields)-1]; last.Manager != "carol" {
		t.Fatalf("last managedFields entry is %q, want the writer carol", last.Manager)
	}

	// Dry run changes nothing.
	dry, err := cms.Apply(ctx, corev1ac.ConfigMap("ssa", ns).WithData(map[string]string{"b": "9"}), metav1.ApplyOptions{FieldManager: "bob", DryRun: []string{metav1.DryRunAll}})
	if err != nil || dry.Data["b"] != "9" {
		t.Fatalf("dry run apply: %v %v", dry, err)
	}
	if got, _ := cms.Get(ctx, "ssa", metav1.GetOptions{}); got.Data["b"] != "3" {
		t.Fatalf("dry run stored b=%q", got.Data["b"])
	}
	if _, err := cms.Apply(ctx, corev1ac.ConfigMap("dry", ns), metav1.ApplyOptions{FieldManager: "bob", DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("dry run apply create: %v", err)
	}
	if _, err := cms.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("dry run apply created the object: %v", err)
	}

	// fieldManager is required.
	_, err = cms.Patch(ctx, "ssa", types.ApplyPatchType, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ssa"}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "fieldManager: Required value: is required for apply patch") {
		t.Fatalf("apply without fieldManager: %v", err)
	}
	// Unknown fields are refused.
	_, err = cms.Patch(ctx, "ssa", types.ApplyPatchType, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ssa"},"bogus":1}`), metav1.PatchOptions{FieldManager: "x"})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("apply with unknown field: %v", err)
	}

	// Lists merge by their keys: two managers own one container each.
	deps := cs.AppsV1().Deployments(ns)
	dep := func(name string, c *corev1ac.ContainerApplyConfiguration) *appsv1ac.DeploymentApplyConfiguration {
		return appsv1ac.Deployment("web", ns).WithSpec(appsv1ac.DeploymentSpec().
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"app": "web"})).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(map[string]string{"app": "web"}).
				WithSpec(corev1ac.PodSpec().WithContainers(c))))
	}
	if _, err := deps.Apply(ctx, dep("web", corev1ac.Container().WithName("web").WithImage("nginx")), metav1.ApplyOptions{FieldManager: "alice"}); err != nil {
		t.Fatal(err)
	}
	d, err := deps.Apply(ctx, dep("web", corev1ac.Container().WithName("sidecar").WithImage("envoy")), metav1.ApplyOptions{FieldManager: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(d.Spec.Template.Spec.Containers); n != 2 {
		t.Fatalf("containers after two managers applied one each: %d", n)
	}
	if d.Generation != 2 {
		t.Fatalf("generation %d, want 2", d.Generation)
	}

	// Apply on status owns status fields only; spec in it is ignored.
	d, err = deps.ApplyStatus(ctx, appsv1ac.Deployment("web", ns).WithStatus(appsv1ac.DeploymentStatus().WithReplicas(5)), metav1.ApplyOptions{FieldManager: "ctrl", Force: true})
	if err != nil {
		t.Fatalf("status apply: %v", err)
	}
	if d.Status.Replicas != 5 {
		t.Fatalf("status replicas %d", d.Status.Replicas)
	}
	assertOwns(t, d.ManagedFields, "ctrl", metav1.ManagedFieldsOperationApply, "status", "f:status", "f:replicas")
	// A status update by another writer is recorded against the subresource.
	pod, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{FieldManager: "creator"})
	if err != nil {
		t.Fatal(err)
	}
	assertOwns(t, pod.ManagedFields, "creator", metav1.ManagedFieldsOperationUpdate, "", "f:containers")
	pod.Status.Phase = corev1.PodRunning
	pod, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{FieldManager: "kubelet"})
	if err != nil {
		t.Fatal(err)
	}
	assertOwns(t, pod.ManagedFields, "kubelet", metav1.ManagedFieldsOperationUpdate, "status", "f:phase")
}

// assertOwns checks that manager's entry for op and subresource lists
// every one of the field keys.
func assertOwns(t *testing.T, entries []metav1.ManagedFieldsEntry, manager string, op metav1.ManagedFieldsOperationType, sub string, keys ...string) {
	t.Helper()
	for _, e := range entries {
		if e.Manager != manager || e.Operation != op || e.Subresource != sub {
			continue
		}
		if e.FieldsV1 == nil {
			t.Fatalf("%s has no fields", manager)
		}
		for _, k := range keys {
			if !strings.Contains(string(e.FieldsV1.Raw), `"`+k+`"`) {
				t.Fatalf("%s's fields %s lack %s", manager, e.FieldsV1.Raw, k)
			}
		}
		return
	}
	t.Fatalf("no %s entry of %s (subresource %q) in %+v", op, manager, sub, entries)
}

package admission_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/admission"
	"github.com/kubebus/kubebus/apiserver/storage"
	"github.com/kubebus/kubebus/test/harness"
)

// TestIntegrationPriorityAndQOS creates priority classes and pods through an
// in-process API server whose admission chain reads classes from its etcd.
func TestIntegrationPriorityAndQOS(t *testing.T) {
	harness.SkipShort(t)
	ctx := context.Background()
	cs, srv := startAPIServer(t, func(store *storage.Store) admission.Chain {
		return admission.Chain{admission.Priority{Classes: &admission.StoredPriorityClasses{Store: store}}}
	})
	pods := cs.CoreV1().Pods("default")
	classes := cs.SchedulingV1().PriorityClasses()
	pod := func(name, class string, mutate ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{PriorityClassName: class, Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}}
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	wantPriority := func(p *corev1.Pod, class string, prio int32, policy corev1.PreemptionPolicy) {
		t.Helper()
		if p.Spec.PriorityClassName != class || p.Spec.Priority == nil || *p.Spec.Priority != prio ||
			p.Spec.PreemptionPolicy == nil || *p.Spec.PreemptionPolicy != policy {
			t.Fatalf("pod %s: class %q priority %v policy %v, want %q %d %s", p.Name, p.Spec.PriorityClassName, p.Spec.Priority, p.Spec.PreemptionPolicy, class, prio, policy)
		}
	}
	forbidden := func(err error, msg string) {
		t.Helper()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), msg) {
			t.Fatalf("err = %v, want 403 with %q", err, msg)
		}
	}

	// The system classes exist after bootstrap and cannot be deleted.
	for name, value := range map[string]int32{"system-node-critical": 2000001000, "system-cluster-critical": 2000000000} {
		pc, err := classes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pc.Value != value || pc.GlobalDefault {
			t.Errorf("%s = value %d default %v", name, pc.Value, pc.GlobalDefault)
		}
		forbidden(classes.Delete(ctx, name, metav1.DeleteOptions{}), "this is a system priority class and cannot be deleted")
	}
	// Bootstrapping again (a second API server) is fine.
	if err := srv.Bootstrap(ctx); err != nil {
		t.Fatalf("second bootstrap: %v", err)
	}

	got, err := pods.Create(ctx, pod("plain", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantPriority(got, "", 0, corev1.PreemptLowerPriority)
	if got.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("qosClass = %q, want BestEffort", got.Status.QOSClass)
	}

	got, err = pods.Create(ctx, pod("node-critical", "system-node-critical"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantPriority(got, "system-node-critical", 2000001000, corev1.PreemptLowerPriority)

	// A class is seen by the very next pod.
	never := corev1.PreemptNever
	if _, err := classes.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "batch"}, Value: 42, PreemptionPolicy: &never}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err = pods.Create(ctx, pod("batch", "batch"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantPriority(got, "batch", 42, corev1.PreemptNever)

	// Updates that leave priority out keep it.
	got.Spec.Priority, got.Spec.PreemptionPolicy = nil, nil
	got.Labels = map[string]string{"updated": "yes"}
	got, err = pods.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update without priority: %v", err)
	}
	wantPriority(got, "batch", 42, corev1.PreemptNever)

	_, err = pods.Create(ctx, pod("missing", "no-such-class"), metav1.CreateOptions{})
	forbidden(err, `pods "missing" is forbidden: no PriorityClass with name no-such-class was found`)
	_, err = pods.Create(ctx, pod("self-set", "batch", func(p *corev1.Pod) { p.Spec.Priority = new(int32(7)) }), metav1.CreateOptions{})
	forbidden(err, "the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 42 from the given PriorityClass name")
	_, err = pods.Create(ctx, pod("self-set-policy", "batch", func(p *corev1.Pod) { p.Spec.PreemptionPolicy = new(corev1.PreemptLowerPriority) }), metav1.CreateOptions{})
	forbidden(err, "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec")

	// A global default applies to pods without a class; only one may exist.
	if _, err := classes.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "everyone"}, Value: 5, GlobalDefault: true}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = classes.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "everyone-else"}, Value: 6, GlobalDefault: true}, metav1.CreateOptions{})
	forbidden(err, "PriorityClass everyone is already marked as default. Only one default can exist")
	got, err = pods.Create(ctx, pod("defaulted", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantPriority(got, "everyone", 5, corev1.PreemptLowerPriority)
	_, err = pods.Create(ctx, pod("explicit-zero", "", func(p *corev1.Pod) { p.Spec.Priority = new(int32(0)) }), metav1.CreateOptions{})
	forbidden(err, "the integer value of priority (0) must not be provided in pod spec; priority admission controller computed 5")

	// QoS classes, init containers included.
	res := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	qos := map[string]struct {
		mutate func(*corev1.Pod)
		want   corev1.PodQOSClass
	}{
		"guaranteed": {func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits = res("1", "1Gi") }, corev1.PodQOSGuaranteed},
		"burstable": {func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: res("500m", "1Gi"), Limits: res("1", "1Gi")}
		}, corev1.PodQOSBurstable},
		"init-breaks-guaranteed": {func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits = res("1", "1Gi")
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.example/init:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}
		}, corev1.PodQOSBurstable},
		"init-only-burstable": {func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.example/init:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("10Mi")}}}}
		}, corev1.PodQOSBurstable},
	}
	for name, tc := range qos {
		got, err := pods.Create(ctx, pod("qos-"+name, "", tc.mutate), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Status.QOSClass != tc.want {
			t.Errorf("%s: qosClass = %q, want %q", name, got.Status.QOSClass, tc.want)
		}
	}
}

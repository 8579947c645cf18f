package apiserver_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebus/kubebus/test/harness"
)

// TestIntegrationEviction drives pods/eviction through client-go against
// `kubebus server` without the disruption controller, so that the test
// sets each budget's status itself: the outcomes of upstream's
// EvictionREST for each state of pod and budget.
func TestIntegrationEviction(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", "--controllers=*,-disruption")
	cs := s.Clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const ns = "default"
	harness.Eventually(t, 30*time.Second, func() error {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err
	})

	// running creates a pod bound to a node with the given readiness.
	running := func(t *testing.T, name, app string, ready bool) *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{NodeName: "somewhere", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		p, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
		p, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// budget creates a budget selecting app and sets its status.
	budget := func(t *testing.T, name, app string, st policyv1.PodDisruptionBudgetStatus, policy *policyv1.UnhealthyPodEvictionPolicyType) {
		t.Helper()
		one := intstr.FromInt32(1)
		b := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, UnhealthyPodEvictionPolicy: policy}}
		b, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, b, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st.ObservedGeneration == 0 {
			st.ObservedGeneration = b.Generation
		}
		b.Status = st
		if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	evict := func(c kubernetes.Interface, name string, opts *metav1.DeleteOptions) error {
		return c.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, DeleteOptions: opts})
	}
	// evicted checks the pod is being deleted with the DisruptionTarget
	// condition (it is bound to a node no kubelet runs, so it stays).
	evicted := func(t *testing.T, name string) {
		t.Helper()
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if p.DeletionTimestamp == nil {
			t.Fatalf("pod %s is not being deleted", name)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == "EvictionByEvictionAPI" {
				return
			}
		}
		t.Fatalf("pod %s lacks the DisruptionTarget condition: %+v", name, p.Status.Conditions)
	}
	untouched := func(t *testing.T, name string) {
		t.Helper()
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			t.Fatalf("pod %s: %v, deletion %v, want untouched", name, err, p.DeletionTimestamp)
		}
	}
	want429 := func(t *testing.T, err error, cause string) {
		t.Helper()
		se, ok := err.(apierrors.APIStatus)
		if !ok || se.Status().Code != http.StatusTooManyRequests {
			t.Fatalf("eviction: %v, want 429", err)
		}
		st := se.Status()
		if st.Message != "Cannot evict pod as it would violate the pod's disruption budget." || st.Details == nil || len(st.Details.Causes) != 1 ||
			st.Details.Causes[0].Type != policyv1.DisruptionBudgetCause || st.Details.Causes[0].Message != cause {
			t.Fatalf("429 status %+v details %+v, want cause %q", st, st.Details, cause)
		}
	}

	t.Run("no budget", func(t *testing.T) {
		running(t, "free", "free", true)
		if err := evict(cs, "free", nil); err != nil {
			t.Fatal(err)
		}
		evicted(t, "free")
		if err := evict(cs, "ghost", nil); !apierrors.IsNotFound(err) {
			t.Fatalf("evicting a missing pod: %v, want 404", err)
		}
	})

	t.Run("budget allows one", func(t *testing.T) {
		running(t, "one-a", "one", true)
		running(t, "one-b", "one", true)
		budget(t, "one", "one", policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2}, nil)
		if err := evict(cs, "one-a", nil); err != nil {
			t.Fatal(err)
		}
		evicted(t, "one-a")
		b, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "one", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := b.Status.DisruptedPods["one-a"]; b.Status.DisruptionsAllowed != 0 || !ok {
			t.Fatalf("budget status after eviction: %+v", b.Status)
		}
		want429(t, evict(cs, "one-b", nil), "The disruption budget one needs 1 healthy pods and has 2 currently")
		untouched(t, "one-b")
	})

	t.Run("stale budget", func(t *testing.T) {
		running(t, "stale-a", "stale", true)
		budget(t, "stale", "stale", policyv1.PodDisruptionBudgetStatus{ObservedGeneration: -1, DisruptionsAllowed: 5}, nil)
		want429(t, evict(cs, "stale-a", nil), "The disruption budget stale is still being processed by the server.")
		untouched(t, "stale-a")
	})

	t.Run("two budgets", func(t *testing.T) {
		running(t, "two-a", "two", true)
		budget(t, "two-1", "two", policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}, nil)
		budget(t, "two-2", "two", policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}, nil)
		err := evict(cs, "two-a", nil)
		se, ok := err.(apierrors.APIStatus)
		if !ok || se.Status().Code != http.StatusInternalServerError ||
			se.Status().Message != "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support." {
			t.Fatalf("eviction under two budgets: %v, want 500", err)
		}
		untouched(t, "two-a")
	})

	t.Run("unhealthy pods", func(t *testing.T) {
		always := policyv1.AlwaysAllow
		running(t, "always-a", "always", false)
		budget(t, "always", "always", policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 0, DesiredHealthy: 1}, &always)
		if err := evict(cs, "always-a", nil); err != nil {
			t.Fatalf("AlwaysAllow, unready pod: %v", err)
		}
		evicted(t, "always-a")

		running(t, "met-a", "met", false)
		running(t, "met-b", "met", true)
		budget(t, "met", "met", policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 1}, nil)
		if err := evict(cs, "met-a", nil); err != nil {
			t.Fatalf("IfHealthyBudget met, unready pod: %v", err)
		}
		evicted(t, "met-a")
		b, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "met", metav1.GetOptions{})
		if err != nil || len(b.Status.DisruptedPods) != 0 {
			t.Fatalf("an unready pod took a disruption: %+v %v", b.Status, err)
		}

		ifHealthy := policyv1.IfHealthyBudget
		running(t, "short-a", "short", false)
		budget(t, "short", "short", policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 0, DesiredHealthy: 1}, &ifHealthy)
		want429(t, evict(cs, "short-a", nil), "The disruption budget short needs 1 healthy pods and has 0 currently")
	})

	t.Run("pods that disrupt nothing", func(t *testing.T) {
		budget(t, "idle", "idle", policyv1.PodDisruptionBudgetStatus{}, nil)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "idle-pending", Labels: map[string]string{"app": "idle"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := evict(cs, "idle-pending", nil); err != nil {
			t.Fatalf("pending pod: %v", err)
		}
		if _, err := cs.CoreV1().Pods(ns).Get(ctx, "idle-pending", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("pending pod after eviction: %v, want gone", err)
		}
		done := running(t, "idle-done", "idle", false)
		done.Status.Phase = corev1.PodSucceeded
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, done, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := evict(cs, "idle-done", nil); err != nil {
			t.Fatalf("succeeded pod: %v", err)
		}
		if _, err := cs.CoreV1().Pods(ns).Get(ctx, "idle-done", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("succeeded pod after eviction: %v, want gone", err)
		}
	})

	t.Run("options", func(t *testing.T) {
		running(t, "opt-a", "opt", true)
		budget(t, "opt", "opt", policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 2, CurrentHealthy: 1}, nil)
		if err := evict(cs, "opt-a", &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatalf("dry run: %v", err)
		}
		untouched(t, "opt-a")
		b, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "opt", metav1.GetOptions{})
		if err != nil || b.Status.DisruptionsAllowed != 2 {
			t.Fatalf("a dry run changed the budget: %+v %v", b.Status, err)
		}
		uid := "not-the-uid"
		pre := metav1.NewUIDPreconditions(uid)
		if err := evict(cs, "opt-a", &metav1.DeleteOptions{Preconditions: pre}); !apierrors.IsConflict(err) {
			t.Fatalf("wrong UID precondition: %v, want 409", err)
		}
		// policy/v1beta1 bodies are accepted too, with a grace period.
		body := `{"apiVersion":"policy/v1beta1","kind":"Eviction","metadata":{"name":"opt-a","namespace":"default"},"deleteOptions":{"gracePeriodSeconds":7}}`
		res := cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("opt-a").SubResource("eviction").
			SetHeader("Content-Type", "application/json").Body([]byte(body)).Do(ctx)
		var code int
		res.StatusCode(&code)
		if err := res.Error(); err != nil || code != http.StatusCreated {
			t.Fatalf("v1beta1 eviction: %d %v", code, err)
		}
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "opt-a", metav1.GetOptions{})
		if err != nil || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 7 {
			t.Fatalf("pod after eviction with grace 7: %v %v", p.DeletionGracePeriodSeconds, err)
		}
		mismatch := `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"other"}}`
		err = cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("opt-a").SubResource("eviction").
			SetHeader("Content-Type", "application/json").Body([]byte(mismatch)).Do(ctx).Error()
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "name in URL does not match name in Eviction object") {
			t.Fatalf("name mismatch: %v, want 400", err)
		}
	})

	t.Run("authorization", func(t *testing.T) {
		for user, role := range map[string]string{"editor": "edit", "viewer": "view"} {
			rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
			if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		as := func(user string) kubernetes.Interface {
			cfg := rest.CopyConfig(s.RESTConfig(t))
			cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
			c, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		running(t, "authz-a", "authz", true)
		if err := evict(as("viewer"), "authz-a", nil); !apierrors.IsForbidden(err) {
			t.Fatalf("viewer evicting: %v, want 403", err)
		}
		harness.Eventually(t, 10*time.Second, func() error {
			if err := evict(as("editor"), "authz-a", nil); err != nil {
				return fmt.Errorf("editor evicting: %w", err)
			}
			return nil
		})
		evicted(t, "authz-a")
	})
}

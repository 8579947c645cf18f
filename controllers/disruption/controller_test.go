package disruption

import (
	"context"
	"log/slog"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubebus/kubebus/controllers"
)

// store is a cache the test fills.
type store[T metav1.Object] []T

func (s store[T]) Get(ns, name string) (T, bool) {
	for _, o := range s {
		if o.GetNamespace() == ns && o.GetName() == name {
			return o, true
		}
	}
	var zero T
	return zero, false
}

func (s store[T]) ListNamespace(ns string) []T {
	var out []T
	for _, o := range s {
		if o.GetNamespace() == ns {
			out = append(out, o)
		}
	}
	return out
}

func controllerRef(kind, name string, uid types.UID) []metav1.OwnerReference {
	yes := true
	return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: &yes}}
}

func TestReconcile(t *testing.T) {
	t.Parallel()
	five, three := int32(5), int32(3)
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "d1"}, Spec: appsv1.DeploymentSpec{Replicas: &five}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns", UID: "rs1", OwnerReferences: controllerRef("Deployment", "web", "d1")},
		Spec: appsv1.ReplicaSetSpec{Replicas: &three}}
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "s1"}, Spec: appsv1.StatefulSetSpec{Replicas: &three}}
	mkPod := func(name, app string, owner []metav1.OwnerReference) *corev1.Pod {
		p := pod(name, true, "")
		p.Labels = map[string]string{"app": app}
		p.OwnerReferences = owner
		return p
	}
	pods := store[*corev1.Pod]{
		mkPod("web-a", "web", controllerRef("ReplicaSet", "web-1", "rs1")),
		mkPod("web-b", "web", controllerRef("ReplicaSet", "web-1", "rs1")),
		mkPod("db-0", "db", controllerRef("StatefulSet", "db", "s1")),
		mkPod("orphan", "orphan", controllerRef("ReplicaSet", "missing", "rs9")),
	}
	mkBudget := func(name, app string, maxUnavailable intstr.IntOrString) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: 1},
			Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, MaxUnavailable: &maxUnavailable}}
	}
	tests := []struct {
		name         string
		pdb          *policyv1.PodDisruptionBudget
		wantExpected int32
		wantAllowed  int32
		wantReason   string
		wantErr      bool
	}{
		{name: "ReplicaSet of a Deployment counts the Deployment", pdb: mkBudget("web", "web", intstr.FromInt32(1)), wantExpected: 5, wantReason: policyv1.InsufficientPodsReason},
		{name: "StatefulSet", pdb: mkBudget("db", "db", intstr.FromString("100%")), wantExpected: 3, wantAllowed: 1, wantReason: policyv1.SufficientPodsReason},
		{name: "missing controller fails safe", pdb: mkBudget("orphan", "orphan", intstr.FromInt32(1)), wantReason: policyv1.SyncFailedReason, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			client := fake.NewClientset(tt.pdb)
			r := &reconciler{client: client, budgets: store[*policyv1.PodDisruptionBudget]{tt.pdb}, pods: pods,
				replicaSets: store[*appsv1.ReplicaSet]{rs}, deployments: store[*appsv1.Deployment]{deploy}, statefulSets: store[*appsv1.StatefulSet]{ss},
				now: func() time.Time { return now }, log: slog.New(slog.DiscardHandler)}
			_, err := r.Reconcile(context.Background(), controllers.Request{Namespace: "ns", Name: tt.pdb.Name})
			if (err != nil) != tt.wantErr {
				t.Fatalf("Reconcile error %v, want error %v", err, tt.wantErr)
			}
			var written *policyv1.PodDisruptionBudget
			for _, a := range client.Actions() {
				if a.GetVerb() == "update" && a.GetSubresource() == "status" {
					written = a.(k8stesting.UpdateAction).GetObject().(*policyv1.PodDisruptionBudget)
				}
			}
			if written == nil {
				t.Fatal("no status written")
			}
			st := written.Status
			c := apimeta.FindStatusCondition(st.Conditions, policyv1.DisruptionAllowedCondition)
			if st.ExpectedPods != tt.wantExpected || st.DisruptionsAllowed != tt.wantAllowed || c == nil || c.Reason != tt.wantReason {
				t.Fatalf("status %+v, want expected %d allowed %d reason %s", st, tt.wantExpected, tt.wantAllowed, tt.wantReason)
			}
		})
	}
}

// TestReconcileNoWrite: a budget whose status is current is not written.
func TestReconcileNoWrite(t *testing.T) {
	t.Parallel()
	p := pod("a", true, "")
	p.Labels = map[string]string{"app": "a"}
	pdb := budget(ptr(intstr.FromInt32(1)), nil)
	pdb.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}
	res, err := Compute(pdb, []*corev1.Pod{p}, scales{}.find, now)
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = res.Status
	client := fake.NewClientset(pdb)
	client.PrependReactor("update", "poddisruptionbudgets", func(k8stesting.Action) (bool, runtime.Object, error) {
		t.Error("status written although current")
		return true, nil, nil
	})
	r := &reconciler{client: client, budgets: store[*policyv1.PodDisruptionBudget]{pdb}, pods: store[*corev1.Pod]{p},
		now: func() time.Time { return now }, log: slog.New(slog.DiscardHandler)}
	if _, err := r.Reconcile(context.Background(), controllers.Request{Namespace: "ns", Name: "b"}); err != nil {
		t.Fatal(err)
	}
}

func TestBudgetsOf(t *testing.T) {
	t.Parallel()
	sel := func(app string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	mk := func(name string, s *metav1.LabelSelector) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: s}}
	}
	r := &reconciler{budgets: store[*policyv1.PodDisruptionBudget]{mk("web", sel("web")), mk("db", sel("db")), mk("none", nil), mk("all", &metav1.LabelSelector{})}}
	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "web"}}}
	cur := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "db"}}}
	var got []string
	for _, b := range r.budgetsOf(old, cur) {
		got = append(got, b.Name)
	}
	if len(got) != 3 || got[0] != "web" || got[1] != "all" || got[2] != "db" {
		t.Fatalf("budgets = %v, want [web all db]", got)
	}
}

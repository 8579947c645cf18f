package disruption

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubebus/kubebus/controllers"
)

func TestStaleDisruption(t *testing.T) {
	t.Parallel()
	marked := func(status corev1.ConditionStatus, reason string, age time.Duration) *corev1.Pod {
		p := pod("p", true, "")
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: status, Reason: reason,
			LastTransitionTime: metav1.NewTime(now.Add(-age))})
		return p
	}
	finished := marked(corev1.ConditionTrue, "EvictionByEvictionAPI", time.Hour)
	finished.Status.Phase = corev1.PodSucceeded
	tests := []struct {
		name      string
		pod       *corev1.Pod
		wantStale bool
		wantWait  time.Duration
	}{
		{name: "no condition", pod: pod("p", true, "")},
		{name: "fresh eviction", pod: marked(corev1.ConditionTrue, "EvictionByEvictionAPI", 30*time.Second), wantStale: true, wantWait: 90 * time.Second},
		{name: "stale eviction", pod: marked(corev1.ConditionTrue, "EvictionByEvictionAPI", 3*time.Minute), wantStale: true},
		{name: "already false", pod: marked(corev1.ConditionFalse, "", time.Hour)},
		{name: "set by the kubelet", pod: marked(corev1.ConditionTrue, corev1.PodReasonTerminationByKubelet, time.Hour)},
		{name: "being deleted", pod: deleting(marked(corev1.ConditionTrue, "EvictionByEvictionAPI", time.Hour))},
		{name: "finished", pod: finished},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stale, wait := staleDisruption(tt.pod, now)
			if stale != tt.wantStale || wait != tt.wantWait {
				t.Fatalf("staleDisruption = %v %v, want %v %v", stale, wait, tt.wantStale, tt.wantWait)
			}
		})
	}
}

func TestReconcilePod(t *testing.T) {
	t.Parallel()
	p := pod("p", true, "")
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "EvictionByEvictionAPI", LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))})
	client := fake.NewClientset(p)
	clock := now
	r := &reconciler{client: client, podGetter: store[*corev1.Pod]{p}, now: func() time.Time { return clock }, log: slog.New(slog.DiscardHandler)}
	req := controllers.Request{Namespace: "ns", Name: "p"}
	res, err := r.reconcilePod(context.Background(), req)
	if err != nil || res.RequeueAfter != time.Minute || len(client.Actions()) != 0 {
		t.Fatalf("fresh condition: %+v %v %v", res, err, client.Actions())
	}
	clock = now.Add(time.Minute)
	if _, err := r.reconcilePod(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var written *corev1.Pod
	for _, a := range client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			written = a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod)
		}
	}
	if written == nil {
		t.Fatal("no status written")
	}
	for _, c := range written.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status != corev1.ConditionFalse {
			t.Fatalf("condition %+v, want False", c)
		}
	}
}

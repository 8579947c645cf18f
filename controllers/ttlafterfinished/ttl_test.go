package ttlafterfinished

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func finishedJob(ttl *int32, cond batchv1.JobConditionType) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "done", UID: "uid-1", ResourceVersion: "5"},
		Spec: batchv1.JobSpec{TTLSecondsAfterFinished: ttl}}
	if cond != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}}
	}
	return j
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	deleting := finishedJob(new(int32(5)), batchv1.JobComplete)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	tests := []struct {
		name string
		job  *batchv1.Job
		at   time.Time
		ok   bool
	}{
		{"complete", finishedJob(new(int32(5)), batchv1.JobComplete), t0.Add(5 * time.Second), true},
		{"failed", finishedJob(new(int32(0)), batchv1.JobFailed), t0, true},
		{"running", finishedJob(new(int32(5)), ""), time.Time{}, false},
		{"only a success criteria met", finishedJob(new(int32(5)), batchv1.JobSuccessCriteriaMet), time.Time{}, false},
		{"no ttl", finishedJob(nil, batchv1.JobComplete), time.Time{}, false},
		{"being deleted", deleting, time.Time{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			at, ok := Expiry(tc.job)
			if ok != tc.ok || !at.Equal(tc.at) {
				t.Fatalf("Expiry = %v %v, want %v %v", at, ok, tc.at, tc.ok)
			}
		})
	}
}

type jobs map[string]*batchv1.Job

func (j jobs) Get(_, name string) (*batchv1.Job, bool) { x, ok := j[name]; return x, ok }
func (jobs) AddHandler(informer.Handler[*batchv1.Job]) {}

// TestReconcileWaitsThenDeletes: with an injected clock, the Job is
// requeued until its TTL passed, then deleted in the background.
func TestReconcileWaitsThenDeletes(t *testing.T) {
	t.Parallel()
	j := finishedJob(new(int32(2)), batchv1.JobComplete)
	client := fake.NewClientset(j)
	now := t0.Add(500 * time.Millisecond)
	r := &reconciler{cfg: Config{Client: client, Jobs: jobs{"done": j}, Now: func() time.Time { return now }}}
	if err := r.cfg.validate(); err != nil {
		t.Fatal(err)
	}
	r.log = r.cfg.Logger
	req := controllers.Request{Namespace: "default", Name: "done"}
	res, err := r.Reconcile(context.Background(), req)
	if err != nil || res.RequeueAfter != 1500*time.Millisecond {
		t.Fatalf("before expiry: %+v %v", res, err)
	}
	if _, err := client.BatchV1().Jobs("default").Get(context.Background(), "done", metav1.GetOptions{}); err != nil {
		t.Fatalf("deleted early: %v", err)
	}
	now = t0.Add(2 * time.Second)
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if _, err := client.BatchV1().Jobs("default").Get(context.Background(), "done", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("not deleted: %v", err)
	}
	var policy *metav1.DeletionPropagation
	for _, a := range client.Actions() {
		if a.GetVerb() == "delete" {
			policy = a.(interface{ GetDeleteOptions() metav1.DeleteOptions }).GetDeleteOptions().PropagationPolicy
		}
	}
	if policy == nil || *policy != metav1.DeletePropagationBackground {
		t.Fatalf("propagation %v, want Background", policy)
	}
}

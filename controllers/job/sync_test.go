package job

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/controllertest"
)

// fakeWriters records the writes of a sync.
type fakeWriters struct {
	mu       sync.Mutex
	created  []*corev1.Pod
	deleted  []string
	patched  []string
	statuses []batchv1.JobStatus
	rv       int
}

func (f *fakeWriters) Create(_ context.Context, p *corev1.Pod) (*corev1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cp := p.DeepCopy()
	cp.Name = fmt.Sprintf("%s%d", p.GenerateName, len(f.created))
	f.created = append(f.created, cp)
	return cp, nil
}

func (f *fakeWriters) Delete(_ context.Context, _, name string, _ types.UID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, name)
	return nil
}

func (f *fakeWriters) PatchType(_ context.Context, _, name string, _ types.PatchType, _ []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.patched = append(f.patched, name)
	return nil
}

func (f *fakeWriters) UpdateStatus(_ context.Context, j *batchv1.Job) (*batchv1.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses = append(f.statuses, *j.Status.DeepCopy())
	f.rv++
	cp := j.DeepCopy()
	cp.ResourceVersion = fmt.Sprint(100 + f.rv)
	return cp, nil
}

func (f *fakeWriters) Get(_ context.Context, _, _ string) (*batchv1.Job, error) {
	return nil, fmt.Errorf("not expected")
}

func newTestReconciler(t *testing.T, j *batchv1.Job, pods ...*corev1.Pod) (*reconciler, *fakeWriters, *record.FakeRecorder) {
	t.Helper()
	j.ResourceVersion = "10"
	for _, p := range pods {
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(j, batchv1.SchemeGroupVersion.WithKind("Job"))}
		p.Labels = j.Spec.Template.Labels
	}
	rec := record.NewFakeRecorder(100)
	f := &fakeWriters{}
	r := newReconciler(Config{
		Pods: controllertest.NewInformer(pods...), Jobs: controllertest.NewInformer(j), Recorder: rec,
		Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return t0 },
		PodFailureBackoff: DefaultPodFailureBackoff, MaxPodFailureBackoff: DefaultMaxPodFailureBackoff, BatchPeriod: DefaultBatchPeriod,
	}, writers{pods: f, jobs: f})
	r.enqueueOrphan = func(controllers.Request) {}
	return r, f, rec
}

func events(rec *record.FakeRecorder) string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return strings.Join(out, "\n")
		}
	}
}

var req = controllers.Request{Namespace: "default", Name: "work"}

func TestSyncStartsPods(t *testing.T) {
	t.Parallel()
	r, f, rec := newTestReconciler(t, testJob(nil))
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if len(f.created) != 2 || !hasTracking(f.created[0]) {
		t.Fatalf("created %d pods", len(f.created))
	}
	last := f.statuses[len(f.statuses)-1]
	if last.Active != 2 || last.StartTime == nil {
		t.Fatalf("status %+v", last)
	}
	if ev := events(rec); strings.Count(ev, ReasonSuccessfulCreate) != 2 {
		t.Fatalf("events %q", ev)
	}
	// The next sync runs from the cache, still older than the write: it
	// waits instead of acting on a stale status.
	res, err := r.Reconcile(context.Background(), req)
	if err != nil || res.RequeueAfter != staleRetry || len(f.created) != 2 {
		t.Fatalf("stale sync: %+v %v, %d created", res, err, len(f.created))
	}
}

func TestSyncCountsAndCompletes(t *testing.T) {
	t.Parallel()
	j := testJob(func(j *batchv1.Job) {
		j.Spec.Completions = new(int32(2))
		j.Status.Succeeded = 1
		s := metav1.NewTime(t0)
		j.Status.StartTime = &s
	})
	r, f, rec := newTestReconciler(t, j, pod("a", corev1.PodSucceeded, -1, untracked), pod("b", corev1.PodSucceeded, -1, exited(0)))
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if len(f.created) != 0 || len(f.patched) != 1 || f.patched[0] != "b" {
		t.Fatalf("created %d, patched %v", len(f.created), f.patched)
	}
	// First write: b uncounted and the interim condition; last: counted and Complete.
	first, last := f.statuses[0], f.statuses[len(f.statuses)-1]
	if len(first.UncountedTerminatedPods.Succeeded) != 1 || first.Succeeded != 1 || findCondition(first.Conditions, batchv1.JobSuccessCriteriaMet) == nil {
		t.Fatalf("first write %+v", first)
	}
	if last.Succeeded != 2 || len(last.UncountedTerminatedPods.Succeeded) != 0 || last.CompletionTime == nil {
		t.Fatalf("last write %+v", last)
	}
	c := findCondition(last.Conditions, batchv1.JobComplete)
	if c == nil || c.Reason != batchv1.JobReasonCompletionsReached {
		t.Fatalf("conditions %+v", last.Conditions)
	}
	if ev := events(rec); !strings.Contains(ev, "Normal Completed Job completed") {
		t.Fatalf("events %q", ev)
	}
}

func TestSyncBackoffLimitExceeded(t *testing.T) {
	t.Parallel()
	j := testJob(func(j *batchv1.Job) {
		j.Spec.BackoffLimit = new(int32(1))
		j.Status.Failed = 1
		s := metav1.NewTime(t0)
		j.Status.StartTime = &s
	})
	r, f, rec := newTestReconciler(t, j, pod("a", corev1.PodFailed, -1, untracked, exited(1)), pod("b", corev1.PodFailed, -1, exited(1)), pod("c", corev1.PodRunning, -1))
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if len(f.deleted) != 1 || f.deleted[0] != "c" || len(f.created) != 0 {
		t.Fatalf("deleted %v created %d", f.deleted, len(f.created))
	}
	// The running pod was deleted in this sync: the Job only fails once
	// the cache shows it gone, in a later sync.
	for _, s := range f.statuses {
		if findCondition(s.Conditions, batchv1.JobFailed) != nil {
			t.Fatalf("failed while a pod was still terminating: %+v", s)
		}
	}
	// Later: c terminated and counted, b counted.
	j2 := j.DeepCopy()
	j2.Status = f.statuses[len(f.statuses)-1]
	j2.Status.Failed = 2
	j2.Status.Conditions = []batchv1.JobCondition{*newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimit, t0)}
	j2.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	r2, f2, rec2 := newTestReconciler(t, j2, pod("a", corev1.PodFailed, -1, untracked), pod("b", corev1.PodFailed, -1, untracked))
	if _, err := r2.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	last := f2.statuses[len(f2.statuses)-1]
	if c := findCondition(last.Conditions, batchv1.JobFailed); c == nil || c.Reason != batchv1.JobReasonBackoffLimitExceeded {
		t.Fatalf("conditions %+v", last.Conditions)
	}
	if ev := events(rec2); !strings.Contains(ev, "Warning BackoffLimitExceeded") {
		t.Fatalf("events %q", ev)
	}
	_ = rec
}

func TestSyncSuspendAndResume(t *testing.T) {
	t.Parallel()
	j := testJob(func(j *batchv1.Job) {
		j.Spec.Suspend = new(true)
		s := metav1.NewTime(t0.Add(-time.Hour))
		j.Status.StartTime = &s
	})
	r, f, rec := newTestReconciler(t, j, pod("a", corev1.PodRunning, -1), pod("b", corev1.PodRunning, -1))
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if len(f.deleted) != 2 || len(f.patched) != 2 {
		t.Fatalf("suspend: deleted %v, finalizers removed from %v", f.deleted, f.patched)
	}
	last := f.statuses[len(f.statuses)-1]
	if c := findCondition(last.Conditions, batchv1.JobSuspended); c == nil || c.Status != corev1.ConditionTrue || last.Active != 0 {
		t.Fatalf("suspended status %+v", last)
	}
	if ev := events(rec); !strings.Contains(ev, "Normal Suspended Job suspended") {
		t.Fatalf("events %q", ev)
	}

	resumed := testJob(func(j *batchv1.Job) {
		s := metav1.NewTime(t0.Add(-time.Hour))
		j.Status.StartTime = &s
		j.Status.Conditions = last.Conditions
	})
	r2, f2, rec2 := newTestReconciler(t, resumed)
	if _, err := r2.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	last = f2.statuses[len(f2.statuses)-1]
	if c := findCondition(last.Conditions, batchv1.JobSuspended); c == nil || c.Status != corev1.ConditionFalse || c.Reason != "JobResumed" {
		t.Fatalf("resumed conditions %+v", last.Conditions)
	}
	if !last.StartTime.Time.Equal(t0) || len(f2.created) != 2 {
		t.Fatalf("resumed: startTime %v, created %d", last.StartTime, len(f2.created))
	}
	if ev := events(rec2); !strings.Contains(ev, "Normal Resumed Job resumed") {
		t.Fatalf("events %q", ev)
	}
}

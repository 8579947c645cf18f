package job

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testJob(mut func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "work", UID: "job-uid"},
		Spec: batchv1.JobSpec{
			Completions: new(int32(5)), Parallelism: new(int32(2)), BackoffLimit: new(int32(6)),
			CompletionMode: new(batchv1.NonIndexedCompletion), Suspend: new(false),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: "job-uid"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{batchv1.ControllerUidLabel: "job-uid"}},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	if mut != nil {
		mut(j)
	}
	return j
}

// pod makes a pod of the Job: phase "" is active and pending; index -1 none.
func pod(name string, phase corev1.PodPhase, index int, mut ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name),
		Finalizers: []string{batchv1.JobTrackingFinalizer}, CreationTimestamp: metav1.NewTime(t0)},
		Status: corev1.PodStatus{Phase: phase}}
	if index >= 0 {
		p.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: fmt.Sprint(index)}
	}
	for _, m := range mut {
		m(p)
	}
	return p
}

func untracked(p *corev1.Pod) { p.Finalizers = nil }

func exited(code int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(t0)}}}}
	}
}

func TestPlanManage(t *testing.T) {
	t.Parallel()
	indexed := func(j *batchv1.Job) { j.Spec.CompletionMode = new(batchv1.IndexedCompletion) }
	tests := []struct {
		name    string
		job     *batchv1.Job
		pods    []*corev1.Pod
		backoff time.Duration
		create  int
		indexes []int
		remove  int
		retry   time.Duration
	}{
		{"a new Job starts parallelism pods", testJob(nil), nil, 0, 2, nil, 0, 0},
		{"never more than the remaining completions", testJob(func(j *batchv1.Job) { j.Status.Succeeded = 1 }),
			[]*corev1.Pod{pod("a", corev1.PodSucceeded, -1, untracked), pod("b", corev1.PodSucceeded, -1), pod("c", corev1.PodSucceeded, -1), pod("d", corev1.PodSucceeded, -1)},
			0, 1, nil, 0, 0},
		{"running at parallelism needs nothing", testJob(nil), []*corev1.Pod{pod("a", corev1.PodRunning, -1), pod("b", "", -1)}, 0, 0, nil, 0, 0},
		{"too many running: the pending one goes", testJob(func(j *batchv1.Job) { j.Spec.Parallelism = new(int32(1)) }),
			[]*corev1.Pod{pod("a", corev1.PodRunning, -1), pod("b", corev1.PodPending, -1)}, 0, 0, nil, 1, 0},
		{"a suspended Job deletes its pods", testJob(func(j *batchv1.Job) { j.Spec.Suspend = new(true) }),
			[]*corev1.Pod{pod("a", corev1.PodRunning, -1), pod("b", corev1.PodPending, -1)}, 0, 0, nil, 2, 0},
		{"a failure holds creation back", testJob(nil), []*corev1.Pod{pod("a", corev1.PodFailed, -1)}, 10 * time.Second, 0, nil, 0, 10 * time.Second},
		{"indexed: the lowest free indexes", testJob(indexed),
			[]*corev1.Pod{pod("a", corev1.PodSucceeded, 0), pod("b", corev1.PodRunning, 1)}, 0, 1, []int{2}, 0, 0},
		{"indexed: a recorded index is not run again", testJob(func(j *batchv1.Job) { indexed(j); j.Status.CompletedIndexes = "0-1,3" }),
			nil, 0, 2, []int{2, 4}, 0, 0},
		{"indexed: a duplicate index goes", testJob(indexed),
			[]*corev1.Pod{pod("a", corev1.PodRunning, 1), pod("b", corev1.PodRunning, 1, func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(time.Second)) })},
			0, 0, nil, 1, 0},
		{"without completions: parallelism until one succeeds", testJob(func(j *batchv1.Job) { j.Spec.Completions = nil; j.Spec.Parallelism = new(int32(3)) }),
			[]*corev1.Pod{pod("a", corev1.PodRunning, -1)}, 0, 2, nil, 0, 0},
		{"without completions: none after a success", testJob(func(j *batchv1.Job) { j.Spec.Completions = nil; j.Spec.Parallelism = new(int32(3)) }),
			[]*corev1.Pod{pod("a", corev1.PodSucceeded, -1), pod("b", corev1.PodRunning, -1)}, 0, 0, nil, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := newState(tc.job.DeepCopy(), tc.pods, nil)
			p := planManage(st, tc.backoff)
			if p.create != tc.create || len(p.remove) != tc.remove || p.retryAfter != tc.retry || fmt.Sprint(p.indexes) != fmt.Sprint(tc.indexes) {
				t.Fatalf("plan create %d %v remove %d retry %v; want create %d %v remove %d retry %v",
					p.create, p.indexes, len(p.remove), p.retryAfter, tc.create, tc.indexes, tc.remove, tc.retry)
			}
		})
	}
}

func TestFinishCondition(t *testing.T) {
	t.Parallel()
	policy := func(action batchv1.PodFailurePolicyAction, codes ...int32) func(*batchv1.Job) {
		return func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: action,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: codes}}}}
		}
	}
	started := func(ago time.Duration) func(*batchv1.Job) {
		return func(j *batchv1.Job) { s := metav1.NewTime(t0.Add(-ago)); j.Status.StartTime = &s }
	}
	tests := []struct {
		name   string
		job    *batchv1.Job
		pods   []*corev1.Pod
		typ    batchv1.JobConditionType
		reason string
		wait   time.Duration
	}{
		{"running", testJob(nil), []*corev1.Pod{pod("a", corev1.PodRunning, -1)}, "", "", 0},
		{"failures up to the limit", testJob(func(j *batchv1.Job) { j.Spec.BackoffLimit = new(int32(1)) }),
			[]*corev1.Pod{pod("a", corev1.PodFailed, -1)}, "", "", 0},
		{"failures past the limit", testJob(func(j *batchv1.Job) { j.Spec.BackoffLimit = new(int32(1)); j.Status.Failed = 1 }),
			[]*corev1.Pod{pod("a", corev1.PodFailed, -1)}, batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, 0},
		{"a recorded target fails the Job", testJob(func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonDeadlineExceeded}}
		}), nil, batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded, 0},
		{"deadline ahead", testJob(func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = new(int64(60)); started(20 * time.Second)(j) }),
			nil, "", "", 40 * time.Second},
		{"deadline passed", testJob(func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = new(int64(60)); started(time.Minute)(j) }),
			nil, batchv1.JobFailureTarget, batchv1.JobReasonDeadlineExceeded, 0},
		{"a suspended Job has no deadline", testJob(func(j *batchv1.Job) {
			j.Spec.ActiveDeadlineSeconds = new(int64(60))
			started(time.Hour)(j)
			j.Spec.Suspend = new(true)
		}), nil, "", "", 0},
		{"FailJob rule", testJob(policy(batchv1.PodFailurePolicyActionFailJob, 42)),
			[]*corev1.Pod{pod("a", corev1.PodFailed, -1, exited(42))}, batchv1.JobFailureTarget, batchv1.JobReasonPodFailurePolicy, 0},
		{"FailJob rule on another code", testJob(policy(batchv1.PodFailurePolicyActionFailJob, 42)),
			[]*corev1.Pod{pod("a", corev1.PodFailed, -1, exited(1))}, "", "", 0},
		{"Ignore rule does not count", testJob(func(j *batchv1.Job) {
			policy(batchv1.PodFailurePolicyActionIgnore, 1)(j)
			j.Spec.BackoffLimit = new(int32(0))
		}),
			[]*corev1.Pod{pod("a", corev1.PodFailed, -1, exited(1))}, "", "", 0},
		{"Count rule counts", testJob(func(j *batchv1.Job) {
			policy(batchv1.PodFailurePolicyActionCount, 1)(j)
			j.Spec.BackoffLimit = new(int32(0))
		}),
			[]*corev1.Pod{pod("a", corev1.PodFailed, -1, exited(1))}, batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, 0},
		{"FailIndex fails the only index", testJob(func(j *batchv1.Job) {
			j.Spec.CompletionMode = new(batchv1.IndexedCompletion)
			j.Spec.Completions = new(int32(1))
			j.Spec.BackoffLimitPerIndex = new(int32(3))
			policy(batchv1.PodFailurePolicyActionFailIndex, 5)(j)
		}), []*corev1.Pod{pod("a", corev1.PodFailed, 0, exited(5))}, batchv1.JobFailureTarget, batchv1.JobReasonFailedIndexes, 0},
		{"OnFailure restarts past the limit", testJob(func(j *batchv1.Job) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			j.Spec.BackoffLimit = new(int32(2))
		}), []*corev1.Pod{pod("a", corev1.PodRunning, -1, func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: 2}}
		})}, batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := newState(tc.job.DeepCopy(), tc.pods, nil)
			c, wait := finishCondition(st, t0)
			var typ batchv1.JobConditionType
			var reason string
			if c != nil {
				typ, reason = c.Type, c.Reason
			}
			if typ != tc.typ || reason != tc.reason || wait != tc.wait {
				t.Fatalf("finishCondition = %q %q wait %v, want %q %q wait %v", typ, reason, wait, tc.typ, tc.reason, tc.wait)
			}
		})
	}
}

// TestTrackingCountsOnce replays the three steps of tracking against
// stale and fresh views and checks every pod is counted exactly once.
func TestTrackingCountsOnce(t *testing.T) {
	t.Parallel()
	j := testJob(nil)
	pods := []*corev1.Pod{pod("a", corev1.PodSucceeded, -1), pod("b", corev1.PodFailed, -1), pod("c", corev1.PodRunning, -1)}

	// Sync 1: a and b go into uncounted; their finalizers are to go.
	st := newState(j.DeepCopy(), pods, nil)
	tp := planTracking(st, false, t0)
	if !tp.flush || len(tp.removeFinalizer) != 2 {
		t.Fatalf("sync 1: flush %v remove %d", tp.flush, len(tp.removeFinalizer))
	}
	u := st.job.Status.UncountedTerminatedPods
	if len(u.Succeeded) != 1 || len(u.Failed) != 1 || st.job.Status.Succeeded != 0 {
		t.Fatalf("sync 1 status %+v", st.job.Status)
	}

	// The finalizer of a is removed, b's removal failed: only a counts.
	delete(tp.withFinalizer, "a")
	cleanUncounted(&st.job.Status, tp.withFinalizer)
	if st.job.Status.Succeeded != 1 || st.job.Status.Failed != 0 || len(st.job.Status.UncountedTerminatedPods.Failed) != 1 {
		t.Fatalf("after removals %+v", st.job.Status)
	}
	stored := st.job.DeepCopy() // written

	// Sync 2 sees a still with its finalizer (the cache lags) but expected
	// removed, b still there: a is not counted again, b is retried.
	st2 := newState(stored.DeepCopy(), pods, map[types.UID]bool{"a": true})
	if st2.succeeded != 1 || st2.failed != 1 {
		t.Fatalf("sync 2 counts succeeded %d failed %d", st2.succeeded, st2.failed)
	}
	tp2 := planTracking(st2, false, t0)
	if len(tp2.removeFinalizer) != 1 || tp2.removeFinalizer[0].Name != "b" {
		t.Fatalf("sync 2 removes %v", tp2.removeFinalizer)
	}
	if n := len(st2.job.Status.UncountedTerminatedPods.Failed); n != 1 {
		t.Fatalf("b listed %d times", n)
	}
	delete(tp2.withFinalizer, "b")
	cleanUncounted(&st2.job.Status, tp2.withFinalizer)
	if st2.job.Status.Succeeded != 1 || st2.job.Status.Failed != 1 {
		t.Fatalf("final %+v", st2.job.Status)
	}

	// After a restart (no expectations), the cache shows both without the
	// finalizer: nothing more is counted.
	done := []*corev1.Pod{pod("a", corev1.PodSucceeded, -1, untracked), pod("b", corev1.PodFailed, -1, untracked), pods[2]}
	st3 := newState(st2.job.DeepCopy(), done, nil)
	tp3 := planTracking(st3, false, t0)
	if tp3.flush || len(tp3.removeFinalizer) != 0 || st3.job.Status.Succeeded != 1 || st3.job.Status.Failed != 1 {
		t.Fatalf("after restart: flush %v remove %d status %+v", tp3.flush, len(tp3.removeFinalizer), st3.job.Status)
	}
}

func TestEnactFinished(t *testing.T) {
	t.Parallel()
	st := newState(testJob(func(j *batchv1.Job) { j.Spec.Completions = new(int32(1)) }), []*corev1.Pod{pod("a", corev1.PodSucceeded, -1)}, nil)
	st.finished = newCondition(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, reasonCompletionsReached, msgCompletionsReached, t0)
	tp := planTracking(st, false, t0)
	if c := findCondition(st.job.Status.Conditions, batchv1.JobSuccessCriteriaMet); c == nil || st.finished.Type != batchv1.JobComplete {
		t.Fatalf("interim condition %v, final %v", st.job.Status.Conditions, st.finished)
	}
	if enactFinished(&st.job.Status, st.finished, 0, t0) {
		t.Fatal("finished with a pod still uncounted")
	}
	delete(tp.withFinalizer, "a")
	cleanUncounted(&st.job.Status, tp.withFinalizer)
	if enactFinished(&st.job.Status, st.finished, 1, t0) {
		t.Fatal("finished with a pod terminating")
	}
	if !enactFinished(&st.job.Status, st.finished, 0, t0) || st.job.Status.CompletionTime == nil || !isFinished(st.job) {
		t.Fatalf("not finished: %+v", st.job.Status)
	}
	if c := findCondition(st.job.Status.Conditions, batchv1.JobComplete); c.Reason != batchv1.JobReasonCompletionsReached {
		t.Fatalf("Complete reason %q", c.Reason)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	failedAt := func(d time.Duration) *corev1.Pod {
		return pod("f", corev1.PodFailed, -1, func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(t0.Add(d))}}}}
		})
	}
	rec := nextBackoff(backoffRecord{}, nil, []*corev1.Pod{failedAt(0)})
	if got := rec.remaining(t0.Add(4*time.Second), 10*time.Second, 6*time.Minute); got != 6*time.Second {
		t.Fatalf("one failure: %v left, want 6s", got)
	}
	rec = nextBackoff(rec, nil, []*corev1.Pod{failedAt(time.Second), failedAt(2 * time.Second)})
	if got := rec.remaining(t0.Add(2*time.Second), 10*time.Second, 6*time.Minute); got != 40*time.Second {
		t.Fatalf("three failures: %v left, want 40s", got)
	}
	for range 10 {
		rec = nextBackoff(rec, nil, []*corev1.Pod{failedAt(2 * time.Second)})
	}
	if got := rec.remaining(t0.Add(2*time.Second), 10*time.Second, 6*time.Minute); got != 6*time.Minute {
		t.Fatalf("many failures: %v left, want the 6m cap", got)
	}
	rec = nextBackoff(rec, []*corev1.Pod{pod("s", corev1.PodSucceeded, -1, exited(0))}, nil)
	if rec.failures != 0 {
		t.Fatalf("a success did not reset: %+v", rec)
	}
}

func TestIndexes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "", "0": "0", "0,1,2": "0-2", "1,3-5,7": "1,3-5,7", "5-3,x,2": "2", "8-12": "8-9"} {
		if got := parseIndexes(in, 10).String(); got != want {
			t.Errorf("parseIndexes(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewPodIndexed(t *testing.T) {
	t.Parallel()
	j := testJob(func(j *batchv1.Job) { j.Spec.CompletionMode = new(batchv1.IndexedCompletion) })
	p := newPod(j, 3, 0)
	if p.Annotations[batchv1.JobCompletionIndexAnnotation] != "3" || p.Labels[batchv1.JobCompletionIndexAnnotation] != "3" ||
		p.Spec.Hostname != "work-3" || p.GenerateName != "work-3-" || !hasTracking(p) {
		t.Fatalf("pod %+v", p.ObjectMeta)
	}
	env := p.Spec.Containers[0].Env
	if len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Fatalf("env %+v", env)
	}
	if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != j.UID || ref.Kind != "Job" {
		t.Fatalf("owner %+v", p.OwnerReferences)
	}
}

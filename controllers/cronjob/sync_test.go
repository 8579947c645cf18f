package cronjob

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/controllertest"
)

// world is a fake API server behind the fake caches: writes land in the
// caches at once, as if the bus delivered them immediately.
type world struct {
	mu       sync.Mutex
	n        int
	jobs     *controllertest.Informer[*batchv1.Job]
	cronJobs *controllertest.Informer[*batchv1.CronJob]
	deleted  []string
	statuses int
}

var (
	jobsGR     = schema.GroupResource{Group: "batch", Resource: "jobs"}
	cronJobsGR = schema.GroupResource{Group: "batch", Resource: "cronjobs"}
)

func (w *world) Create(_ context.Context, job *batchv1.Job) (*batchv1.Job, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.jobs.Get(job.Namespace, job.Name); ok {
		return nil, apierrors.NewAlreadyExists(jobsGR, job.Name)
	}
	w.n++
	j := job.DeepCopy()
	j.UID = types.UID(fmt.Sprintf("job-uid-%d", w.n))
	j.ResourceVersion = fmt.Sprint(w.n)
	w.jobs.Set(j)
	return j, nil
}

func (w *world) Get(_ context.Context, namespace, name string) (*batchv1.Job, error) {
	if j, ok := w.jobs.Get(namespace, name); ok {
		return j, nil
	}
	return nil, apierrors.NewNotFound(jobsGR, name)
}

func (w *world) Delete(_ context.Context, namespace, name string, uid types.UID) error {
	j, ok := w.jobs.Get(namespace, name)
	if !ok || j.UID != uid {
		return apierrors.NewNotFound(jobsGR, name)
	}
	w.mu.Lock()
	w.deleted = append(w.deleted, name)
	w.mu.Unlock()
	w.jobs.Remove(j)
	return nil
}

type cronJobAPI struct{ w *world }

func (c cronJobAPI) Get(_ context.Context, namespace, name string) (*batchv1.CronJob, error) {
	if cj, ok := c.w.cronJobs.Get(namespace, name); ok {
		return cj, nil
	}
	return nil, apierrors.NewNotFound(cronJobsGR, name)
}

func (c cronJobAPI) UpdateStatus(_ context.Context, cj *batchv1.CronJob) (*batchv1.CronJob, error) {
	c.w.mu.Lock()
	c.w.statuses++
	c.w.mu.Unlock()
	c.w.cronJobs.Set(cj.DeepCopy())
	return cj, nil
}

// finish marks a Job finished (as the Job controller would) at now.
func (w *world) finish(t *testing.T, name string, cond batchv1.JobConditionType, now time.Time) {
	t.Helper()
	j, ok := w.jobs.Get("ns", name)
	if !ok {
		t.Fatalf("no job %s", name)
	}
	j = j.DeepCopy()
	j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: cond, Status: corev1.ConditionTrue})
	if cond == batchv1.JobComplete {
		j.Status.CompletionTime = ptr.To(metav1.NewTime(now))
	}
	w.jobs.Set(j)
}

// start marks a Job started at now.
func (w *world) start(name string, now time.Time) {
	j, _ := w.jobs.Get("ns", name)
	j = j.DeepCopy()
	j.Status.StartTime = ptr.To(metav1.NewTime(now))
	w.jobs.Set(j)
}

func (w *world) jobNames() []string {
	var out []string
	for _, j := range w.jobs.ListNamespace("ns") {
		out = append(out, j.Name)
	}
	slices.Sort(out)
	return out
}

type harness struct {
	t     *testing.T
	w     *world
	r     *reconciler
	clock *FakeClock
	rec   *record.FakeRecorder
}

func newHarness(t *testing.T, cj *batchv1.CronJob, now time.Time) *harness {
	w := &world{jobs: controllertest.NewInformer[*batchv1.Job](), cronJobs: controllertest.NewInformer(cj)}
	clock := NewFakeClock(now)
	rec := record.NewFakeRecorder(1000)
	r := newReconciler(Config{Jobs: w.jobs, CronJobs: w.cronJobs, Recorder: rec, Logger: slog.New(slog.DiscardHandler), Clock: clock},
		writers{jobs: w, cronJobs: cronJobAPI{w}})
	return &harness{t: t, w: w, r: r, clock: clock, rec: rec}
}

// sync reconciles the CronJob at the clock's time and returns the requeue.
func (h *harness) sync() time.Duration {
	h.t.Helper()
	res, err := h.r.Reconcile(context.Background(), controllers.Request{Namespace: "ns", Name: "cj"})
	if err != nil {
		h.t.Fatalf("reconcile at %s: %v", h.clock.Now().Format(time.TimeOnly), err)
	}
	return res.RequeueAfter
}

// advance moves the clock by the requeue and syncs, as the work queue would.
func (h *harness) advance(d time.Duration) time.Duration {
	h.clock.Step(d)
	return h.sync()
}

func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (h *harness) cronJob() *batchv1.CronJob {
	cj, _ := h.w.cronJobs.Get("ns", "cj")
	return cj
}

func countPrefix(events []string, prefix string) int {
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

// TestForbidOnePerMinute: "*/1 * * * *" with Forbid creates one Job per
// minute and skips the minutes while one runs; the clock is injected.
func TestForbidOnePerMinute(t *testing.T) {
	t.Parallel()
	created := at("2026-01-01T10:00:30Z")
	h := newHarness(t, cronJob("*/1 * * * *", "2026-01-01T10:00:30Z", policy(batchv1.ForbidConcurrent)), created)
	wait := h.sync()
	if len(h.w.jobNames()) != 0 || wait != 30*time.Second+nextScheduleDelta {
		t.Fatalf("before the first minute: jobs %v, requeue %s", h.w.jobNames(), wait)
	}
	// Three minutes: each Job finishes within its minute.
	var want []string
	for i := 1; i <= 3; i++ {
		h.advance(wait)
		name := JobName(h.cronJob(), created.Truncate(time.Minute).Add(time.Duration(i)*time.Minute))
		want = append(want, name)
		if got := h.w.jobNames(); !slices.Equal(got, want) {
			t.Fatalf("minute %d: jobs %v, want %v", i, got, want)
		}
		if got := activeNames(h.cronJob().Status); !slices.Equal(got, []string{name}) {
			t.Fatalf("minute %d: active %v", i, got)
		}
		h.w.start(name, h.clock.Now())
		h.clock.Step(20 * time.Second)
		h.w.finish(t, name, batchv1.JobComplete, h.clock.Now())
		wait = h.sync()
		if len(h.cronJob().Status.Active) != 0 {
			t.Fatalf("minute %d: still active after finishing", i)
		}
	}
	ev := h.events()
	if n := countPrefix(ev, "Normal SuccessfulCreate Created job cj-"); n != 3 {
		t.Errorf("%d SuccessfulCreate events, want 3: %v", n, ev)
	}
	if n := countPrefix(ev, "Normal SawCompletedJob"); n != 3 {
		t.Errorf("%d SawCompletedJob events, want 3: %v", n, ev)
	}
	if last := h.cronJob().Status.LastSuccessfulTime; last == nil || !last.Time.Equal(h.clock.Now()) {
		t.Errorf("lastSuccessfulTime %v, want %s", last, h.clock.Now())
	}

	// The fourth Job runs for three minutes: those minutes are skipped.
	wait = h.advance(wait)
	fourth := h.w.jobNames()[3]
	for i := 0; i < 3; i++ {
		wait = h.advance(wait)
		if got := len(h.w.jobNames()); got != 4 {
			t.Fatalf("a Job was created while one runs: %v", h.w.jobNames())
		}
	}
	if n := countPrefix(h.events(), "Normal JobAlreadyActive"); n != 3 {
		t.Errorf("%d JobAlreadyActive events, want 3", n)
	}
	h.clock.Step(30 * time.Second)
	h.w.finish(t, fourth, batchv1.JobComplete, h.clock.Now())
	h.sync()
	// As upstream: the most recent missed time starts as soon as the
	// running Job is done.
	if got := h.w.jobNames(); len(got) != 5 {
		t.Fatalf("after the long Job: jobs %v, want a fifth", got)
	}
	if got := h.cronJob().Status.LastScheduleTime.Time; !got.Equal(h.clock.Now().Truncate(time.Minute)) {
		t.Errorf("lastScheduleTime %s, want %s", got, h.clock.Now().Truncate(time.Minute))
	}
}

// TestReplace: at the next time the running Job is deleted and replaced.
func TestReplace(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cronJob("*/1 * * * *", "2026-01-01T10:00:30Z", policy(batchv1.ReplaceConcurrent)), at("2026-01-01T10:01:00.1Z"))
	wait := h.sync()
	first := h.w.jobNames()
	h.advance(wait)
	got := h.w.jobNames()
	if len(first) != 1 || len(got) != 1 || got[0] == first[0] {
		t.Fatalf("jobs %v then %v, want one replaced by another", first, got)
	}
	if !slices.Equal(h.w.deleted, first) {
		t.Errorf("deleted %v, want %v", h.w.deleted, first)
	}
	if a := activeNames(h.cronJob().Status); !slices.Equal(a, got) {
		t.Errorf("active %v, want %v", a, got)
	}
	ev := h.events()
	if n := countPrefix(ev, "Normal SuccessfulDelete Deleted job "+first[0]); n != 1 {
		t.Errorf("events %v: want SuccessfulDelete of %s", ev, first[0])
	}
}

// TestHistoryLimits: finished Jobs beyond the limits go, oldest first.
func TestHistoryLimits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cronJob("*/1 * * * *", "2026-01-01T10:00:30Z", limits(3, 1)), at("2026-01-01T10:00:30Z"))
	wait := h.sync()
	var made []string
	for i := 0; i < 8; i++ {
		h.advance(wait)
		name := activeNames(h.cronJob().Status)[0]
		made = append(made, name)
		h.w.start(name, h.clock.Now())
		h.clock.Step(10 * time.Second)
		cond := batchv1.JobComplete
		if i%2 == 1 {
			cond = batchv1.JobFailed
		}
		h.w.finish(t, name, cond, h.clock.Now())
		wait = h.sync()
	}
	// Made 0..7: succeeded 0,2,4,6 keep 2,4,6; failed 1,3,5,7 keep 7.
	want := []string{made[2], made[4], made[6], made[7]}
	slices.Sort(want)
	if got := h.w.jobNames(); !slices.Equal(got, want) {
		t.Errorf("jobs kept %v, want %v", got, want)
	}
	if n := countPrefix(h.events(), "Normal SuccessfulDelete"); n != 4 {
		t.Errorf("%d SuccessfulDelete events, want 4", n)
	}
}

// TestStaleStatus: a status write lost after the Job was created is
// repaired from the API server, and the Job is not created twice.
func TestStaleStatus(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cronJob("*/1 * * * *", "2026-01-01T10:00:30Z", policy(batchv1.ForbidConcurrent)), at("2026-01-01T10:01:00.1Z"))
	orig := h.cronJob()
	h.sync()
	// Roll the CronJob back to before the status write.
	h.w.cronJobs.Put(orig)
	h.sync()
	if got := h.w.jobNames(); len(got) != 1 {
		t.Fatalf("jobs %v, want one", got)
	}
	if a := activeNames(h.cronJob().Status); len(a) != 1 {
		t.Errorf("active %v, want the Job found again", a)
	}
}

// TestMissingJob: an active Job deleted behind the controller's back
// leaves the active list once the API server confirms it.
func TestMissingJob(t *testing.T) {
	t.Parallel()
	h := newHarness(t, cronJob("*/1 * * * *", "2026-01-01T10:00:30Z", policy(batchv1.ForbidConcurrent)), at("2026-01-01T10:01:00.1Z"))
	h.sync()
	j, _ := h.w.jobs.Get("ns", h.w.jobNames()[0])
	h.w.jobs.Remove(j)
	h.sync()
	if a := h.cronJob().Status.Active; len(a) != 0 {
		t.Errorf("active %v after the Job was deleted", a)
	}
	if n := countPrefix(h.events(), "Normal MissingJob Active job went missing: "+j.Name); n != 1 {
		t.Error("no MissingJob event")
	}
}

// TestHandlers: Job changes wake the controlling CronJob; a schedule
// change waits for the new schedule's next time.
func TestHandlers(t *testing.T) {
	t.Parallel()
	cj := cronJob("*/5 * * * *", "2026-01-01T10:00:30Z")
	h := newHarness(t, cj, at("2026-01-01T10:02:00Z"))
	var now []string
	later := map[string]time.Duration{}
	h.r.register(func(r controllers.Request) { now = append(now, r.String()) },
		func(r controllers.Request, d time.Duration) { later[r.String()] = d })
	j := JobFor(cj, at("2026-01-01T10:00:00Z"))
	j.UID = "j"
	h.w.jobs.Set(j)
	orphan := j.DeepCopy()
	orphan.Name, orphan.OwnerReferences = "orphan", nil
	h.w.jobs.Set(orphan)
	if !slices.Equal(now, []string{"ns/cj"}) {
		t.Errorf("enqueued %v, want ns/cj once", now)
	}
	changed := cj.DeepCopy()
	changed.Spec.Schedule = "*/10 * * * *"
	h.w.cronJobs.Set(changed)
	if got := later["ns/cj"]; got != 8*time.Minute+nextScheduleDelta {
		t.Errorf("schedule change requeued after %s, want 8m", got)
	}
}

package cronjob

import (
	"fmt"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// job returns a Job the test CronJob controls, started at started (if
// set) and finished with cond (Complete or Failed) at finished (if set).
func job(name, started string, cond batchv1.JobConditionType, finished string) *batchv1.Job {
	owner := cronJob("*/1 * * * *", "2026-01-01T00:00:00Z")
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, controllerKind)}}}
	if started != "" {
		j.Status.StartTime = ptr.To(metav1.NewTime(at(started)))
	}
	if cond != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue}}
		if cond == batchv1.JobComplete && finished != "" {
			j.Status.CompletionTime = ptr.To(metav1.NewTime(at(finished)))
		}
	}
	return j
}

func active(names ...string) func(*batchv1.CronJob) {
	return func(c *batchv1.CronJob) {
		for _, n := range names {
			c.Status.Active = append(c.Status.Active, corev1.ObjectReference{Kind: "Job", Namespace: "ns", Name: n, UID: types.UID(n + "-uid")})
		}
	}
}

func policy(p batchv1.ConcurrencyPolicy) func(*batchv1.CronJob) {
	return func(c *batchv1.CronJob) { c.Spec.ConcurrencyPolicy = p }
}

func limits(succeeded, failed int32) func(*batchv1.CronJob) {
	return func(c *batchv1.CronJob) {
		c.Spec.SuccessfulJobsHistoryLimit, c.Spec.FailedJobsHistoryLimit = &succeeded, &failed
	}
}

func reasons(events []Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Reason)
	}
	return out
}

func names(jobs []*batchv1.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Name)
	}
	return out
}

func activeNames(st batchv1.CronJobStatus) []string {
	var out []string
	for _, r := range st.Active {
		out = append(out, r.Name)
	}
	return out
}

func TestNewPlan(t *testing.T) {
	t.Parallel()
	const created = "2026-01-01T10:00:30Z"
	minute := func(s string) string { return JobName(cronJob("", created), at(s)) } // cj-<minutes>
	m1, m2 := minute("2026-01-01T10:01:00Z"), minute("2026-01-01T10:02:00Z")
	for _, tc := range []struct {
		name    string
		cj      *batchv1.CronJob
		jobs    []*batchv1.Job
		gone    []string
		now     string
		create  string // name of the Job created, "" for none
		replace []string
		prune   []string
		events  []string
		active  []string // status.active after observing
		requeue time.Duration
		noWake  bool // no requeue
	}{
		{name: "not due", cj: cronJob("*/1 * * * *", created), now: "2026-01-01T10:00:45Z",
			requeue: 15*time.Second + nextScheduleDelta},
		{name: "due: create", cj: cronJob("*/1 * * * *", created), now: "2026-01-01T10:01:00.2Z",
			create: m1, requeue: 59800*time.Millisecond + nextScheduleDelta},
		{name: "this time already ran", cj: cronJob("*/1 * * * *", created, lastScheduled("2026-01-01T10:01:00Z"), active(m1)),
			jobs: []*batchv1.Job{job(m1, "2026-01-01T10:01:01Z", "", "")}, now: "2026-01-01T10:01:30Z", active: []string{m1},
			requeue: 30*time.Second + nextScheduleDelta},
		{name: "forbid: skip while one runs", cj: cronJob("*/1 * * * *", created, policy(batchv1.ForbidConcurrent), lastScheduled("2026-01-01T10:01:00Z"), active(m1)),
			jobs: []*batchv1.Job{job(m1, "2026-01-01T10:01:01Z", "", "")}, now: "2026-01-01T10:02:00.1Z",
			events: []string{"JobAlreadyActive"}, active: []string{m1}, requeue: 59900*time.Millisecond + nextScheduleDelta},
		{name: "forbid: run once the last finished", cj: cronJob("*/1 * * * *", created, policy(batchv1.ForbidConcurrent), lastScheduled("2026-01-01T10:01:00Z"), active(m1)),
			jobs: []*batchv1.Job{job(m1, "2026-01-01T10:01:01Z", batchv1.JobComplete, "2026-01-01T10:01:20Z")}, now: "2026-01-01T10:02:00.1Z",
			events: []string{"SawCompletedJob"}, create: m2, requeue: 59900*time.Millisecond + nextScheduleDelta},
		{name: "allow: run alongside", cj: cronJob("*/1 * * * *", created, lastScheduled("2026-01-01T10:01:00Z"), active(m1)),
			jobs: []*batchv1.Job{job(m1, "2026-01-01T10:01:01Z", "", "")}, now: "2026-01-01T10:02:00.1Z",
			active: []string{m1}, create: m2, requeue: 59900*time.Millisecond + nextScheduleDelta},
		{name: "replace: delete the running one", cj: cronJob("*/1 * * * *", created, policy(batchv1.ReplaceConcurrent), lastScheduled("2026-01-01T10:01:00Z"), active(m1)),
			jobs: []*batchv1.Job{job(m1, "2026-01-01T10:01:01Z", "", "")}, now: "2026-01-01T10:02:00.1Z",
			active: []string{m1}, replace: []string{m1}, create: m2, requeue: 59900*time.Millisecond + nextScheduleDelta},
		{name: "suspended", cj: cronJob("*/1 * * * *", created, func(c *batchv1.CronJob) { c.Spec.Suspend = ptr.To(true) }),
			now: "2026-01-01T10:05:00Z", noWake: true},
		{name: "being deleted", cj: cronJob("*/1 * * * *", created, func(c *batchv1.CronJob) { c.DeletionTimestamp = ptr.To(metav1.Now()) }),
			now: "2026-01-01T10:05:00Z", noWake: true},
		{name: "unknown time zone", cj: cronJob("*/1 * * * *", created, func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Mars/Olympus") }),
			now: "2026-01-01T10:05:00Z", events: []string{"UnknownTimeZone"}, noWake: true},
		{name: "unparseable schedule", cj: cronJob("61 * * * *", created), now: "2026-01-01T10:05:00Z",
			events: []string{"UnparseableSchedule"}, noWake: true},
		{name: "zone in the schedule", cj: cronJob("TZ=UTC */1 * * * *", created), now: "2026-01-01T10:00:45Z",
			events: []string{"UnsupportedSchedule"}, requeue: 15*time.Second + nextScheduleDelta},
		{name: "impossible date", cj: cronJob("59 23 31 2 *", created), now: "2036-01-01T00:00:00Z",
			events: []string{"InvalidSchedule"}, noWake: true},
		{name: "too many missed: warn and run the latest", cj: cronJob("*/1 * * * *", created), now: "2026-01-01T13:00:10Z",
			events: []string{"TooManyMissedTimes"}, create: minute("2026-01-01T13:00:00Z"), requeue: 50*time.Second + nextScheduleDelta},
		{name: "deadline passed", cj: cronJob("0 * * * *", created, deadline(30)), now: "2026-01-01T11:00:40Z",
			requeue: 59*time.Minute + 20*time.Second + nextScheduleDelta},
		{name: "within deadline", cj: cronJob("0 * * * *", created, deadline(60)), now: "2026-01-01T11:00:40Z",
			create: minute("2026-01-01T11:00:00Z"), requeue: 59*time.Minute + 20*time.Second + nextScheduleDelta},
		{name: "missing job confirmed gone", cj: cronJob("*/1 * * * *", created, policy(batchv1.ForbidConcurrent), lastScheduled("2026-01-01T10:01:00Z"), active(m1)),
			gone: []string{m1}, now: "2026-01-01T10:01:30Z", events: []string{"MissingJob"}, requeue: 30*time.Second + nextScheduleDelta},
		{name: "missing job not confirmed: kept", cj: cronJob("*/1 * * * *", created, policy(batchv1.ForbidConcurrent), lastScheduled("2026-01-01T10:01:00Z"), active(m1)),
			now: "2026-01-01T10:01:30Z", active: []string{m1}, requeue: 30*time.Second + nextScheduleDelta},
		{name: "unexpected job", cj: cronJob("*/1 * * * *", created, lastScheduled("2026-01-01T10:01:00Z")),
			jobs: []*batchv1.Job{job("manual", "2026-01-01T10:01:10Z", "", "")}, now: "2026-01-01T10:01:30Z",
			events: []string{"UnexpectedJob"}, requeue: 30*time.Second + nextScheduleDelta},
		{name: "history limits", cj: cronJob("*/1 * * * *", created, limits(2, 1), lastScheduled("2026-01-01T10:06:00Z")),
			jobs: []*batchv1.Job{
				job("s3", "2026-01-01T10:03:00Z", batchv1.JobComplete, "2026-01-01T10:03:30Z"),
				job("s1", "2026-01-01T10:01:00Z", batchv1.JobComplete, "2026-01-01T10:01:30Z"),
				job("s2", "2026-01-01T10:02:00Z", batchv1.JobComplete, "2026-01-01T10:02:30Z"),
				job("f1", "2026-01-01T10:04:00Z", batchv1.JobFailed, ""),
				job("f2", "2026-01-01T10:05:00Z", batchv1.JobFailed, ""),
				job("running", "2026-01-01T10:00:00Z", "", ""),
			}, now: "2026-01-01T10:06:10Z", prune: []string{"s1", "f1"}, events: []string{"UnexpectedJob"},
			requeue: 50*time.Second + nextScheduleDelta},
		{name: "no limits: keep all", cj: cronJob("*/1 * * * *", created, lastScheduled("2026-01-01T10:06:00Z")),
			jobs: []*batchv1.Job{
				job("s1", "2026-01-01T10:01:00Z", batchv1.JobComplete, "2026-01-01T10:01:30Z"),
				job("s2", "2026-01-01T10:02:00Z", batchv1.JobComplete, "2026-01-01T10:02:30Z"),
			}, now: "2026-01-01T10:06:10Z", requeue: 50*time.Second + nextScheduleDelta},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gone := map[types.UID]bool{}
			for _, n := range tc.gone {
				gone[types.UID(n+"-uid")] = true
			}
			in := tc.cj.DeepCopy()
			p := NewPlan(Input{CronJob: in, Jobs: tc.jobs, Now: at(tc.now), Gone: gone})
			if !equalish(in, tc.cj) {
				t.Errorf("NewPlan modified its input")
			}
			var created string
			if p.Create != nil {
				created = p.Create.Name
			}
			if created != tc.create {
				t.Errorf("created %q, want %q", created, tc.create)
			}
			var replaced []string
			for _, r := range p.Replace {
				replaced = append(replaced, r.Name)
			}
			if !slices.Equal(replaced, tc.replace) {
				t.Errorf("replace %v, want %v", replaced, tc.replace)
			}
			if got := names(p.Prune); !slices.Equal(got, tc.prune) {
				t.Errorf("prune %v, want %v", got, tc.prune)
			}
			if got := reasons(p.Events); !slices.Equal(got, tc.events) {
				t.Errorf("events %v, want %v (%+v)", got, tc.events, p.Events)
			}
			if got := activeNames(p.Status); !slices.Equal(got, tc.active) {
				t.Errorf("active %v, want %v", got, tc.active)
			}
			switch {
			case tc.noWake && p.Requeue != nil:
				t.Errorf("requeue after %s, want none", *p.Requeue)
			case !tc.noWake && p.Requeue == nil:
				t.Errorf("no requeue, want after %s", tc.requeue)
			case !tc.noWake && *p.Requeue != tc.requeue:
				t.Errorf("requeue after %s, want %s", *p.Requeue, tc.requeue)
			}
		})
	}
}

func equalish(a, b *batchv1.CronJob) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func TestNewPlanLastSuccessfulTime(t *testing.T) {
	t.Parallel()
	cj := cronJob("*/1 * * * *", "2026-01-01T10:00:30Z", lastScheduled("2026-01-01T10:03:00Z"), active("b"))
	cj.Status.LastSuccessfulTime = ptr.To(metav1.NewTime(at("2026-01-01T10:01:30Z")))
	p := NewPlan(Input{CronJob: cj, Now: at("2026-01-01T10:03:10Z"), Jobs: []*batchv1.Job{
		job("a", "2026-01-01T10:01:00Z", batchv1.JobComplete, "2026-01-01T10:01:30Z"),
		job("b", "2026-01-01T10:02:00Z", batchv1.JobComplete, "2026-01-01T10:02:40Z"),
		job("c", "2026-01-01T10:03:00Z", batchv1.JobFailed, ""),
	}})
	if got := p.Status.LastSuccessfulTime; got == nil || !got.Time.Equal(at("2026-01-01T10:02:40Z")) {
		t.Errorf("lastSuccessfulTime = %v, want 10:02:40", got)
	}
	if len(p.Status.Active) != 0 {
		t.Errorf("active = %v, want none", p.Status.Active)
	}
	if want := "Saw completed job: b, condition: Complete"; len(p.Events) != 1 || p.Events[0].Message != want {
		t.Errorf("events = %+v, want one %q", p.Events, want)
	}
}

func TestJobFor(t *testing.T) {
	t.Parallel()
	cj := cronJob("0 9 * * *", "2026-01-01T00:00:00Z", func(c *batchv1.CronJob) {
		c.Spec.TimeZone = ptr.To("Asia/Tokyo")
		c.Spec.JobTemplate = batchv1.JobTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"note": "y"}},
			Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](2), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}},
		}
	})
	j := JobFor(cj, at("2026-01-02T00:00:00Z"))
	if j.Name != "cj-29455200" || j.Namespace != "ns" {
		t.Errorf("name %s/%s", j.Namespace, j.Name)
	}
	if j.Labels["app"] != "x" || j.Annotations["note"] != "y" {
		t.Errorf("labels %v annotations %v: the template's are not copied", j.Labels, j.Annotations)
	}
	if got, want := j.Annotations[batchv1.CronJobScheduledTimestampAnnotation], "2026-01-02T09:00:00+09:00"; got != want {
		t.Errorf("scheduled timestamp %q, want %q", got, want)
	}
	ref := metav1.GetControllerOf(j)
	if ref == nil || ref.UID != cj.UID || ref.Kind != "CronJob" || ref.APIVersion != "batch/v1" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("controller reference %+v", ref)
	}
	if *j.Spec.BackoffLimit != 2 || j.Spec.Template.Spec.Containers[0].Image != "busybox" {
		t.Errorf("spec not copied: %+v", j.Spec)
	}
	j.Labels["app"] = "changed"
	if cj.Spec.JobTemplate.Labels["app"] != "x" {
		t.Error("the Job shares the template's labels")
	}
}

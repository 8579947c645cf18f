package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/kubebus/kubebus/test/harness"
	"github.com/kubebus/kubebus/test/prereq"
)

// cronClockSpeed is how much faster than real time the CronJob controller's
// clock runs in these tests (the hidden --cronjob-clock-speed flag of
// `kubebus server`): a schedule's minute passes every two seconds.
const cronClockSpeed = 30

// testManager is the spec.managedBy of the Jobs the tests finish
// themselves: the built-in Job controller leaves such Jobs to their
// manager, here the test, which writes their status as a Job controller
// would.
const testManager = "e2e.kubebus.io/cronjob-test"

// TestIntegrationCronJob runs the real `kubebus server` with the CronJob
// controller's clock sped up: "*/1 * * * *" with Forbid makes one Job per
// schedule minute and skips while one runs, Replace replaces the running
// Job, the success history is pruned, and the stock kubectl 1.32 and 1.33
// instantiate a Job from a CronJob with `create job --from=cronjob/...`.
func TestIntegrationCronJob(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", fmt.Sprint("--cronjob-clock-speed=", cronClockSpeed))
	cs := s.Clientset(t)

	t.Run("forbid", func(t *testing.T) { cronForbid(t, cs) })
	t.Run("replace", func(t *testing.T) { cronReplace(t, cs) })
	for _, minor := range []string{"1.32", "1.33"} {
		t.Run("kubectl "+minor+" create job --from", func(t *testing.T) {
			bin := harness.PinnedKubectl(t, minor)
			if bin == "" {
				prereq.Missing(t, "kubectl.%s not found on PATH or beside the stock kubectl", minor)
			}
			cronCreateJobFrom(t, s, cs, bin, "from-"+strings.ReplaceAll(minor, ".", ""))
		})
	}
}

func tickCronJob(name string, policy batchv1.ConcurrencyPolicy) *batchv1.CronJob {
	manager := testManager
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.CronJobSpec{
			Schedule: "*/1 * * * *", ConcurrencyPolicy: policy, SuccessfulJobsHistoryLimit: new(int32(2)),
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"cron": name}},
				Spec: batchv1.JobSpec{ManagedBy: &manager, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"true"}}},
				}}},
			},
		},
	}
}

// cronJobs lists the Jobs cj controls, oldest schedule first.
func cronJobs(t *testing.T, cs kubernetes.Interface, cj *batchv1.CronJob) []batchv1.Job {
	t.Helper()
	list, err := cs.BatchV1().Jobs("default").List(context.Background(), metav1.ListOptions{LabelSelector: "cron=" + cj.Name})
	if err != nil {
		t.Fatal(err)
	}
	var out []batchv1.Job
	for _, j := range list.Items {
		if ref := metav1.GetControllerOf(&j); ref != nil && ref.UID == cj.UID {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b batchv1.Job) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func jobFinished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// scheduledMinute checks a Job made for cj at a scheduled time (name,
// annotation, labels, controller reference) and returns that time in
// minutes since the epoch.
func scheduledMinute(t *testing.T, cj *batchv1.CronJob, j *batchv1.Job) int64 {
	t.Helper()
	minute, err := strconv.ParseInt(strings.TrimPrefix(j.Name, cj.Name+"-"), 10, 64)
	if err != nil || !strings.HasPrefix(j.Name, cj.Name+"-") {
		t.Fatalf("job %s is not named <cronjob>-<minutes>", j.Name)
	}
	if got, want := j.Annotations[batchv1.CronJobScheduledTimestampAnnotation], time.Unix(minute*60, 0).UTC().Format(time.RFC3339); got != want {
		t.Errorf("job %s: scheduled timestamp %q, want %q", j.Name, got, want)
	}
	ref := metav1.GetControllerOf(j)
	if ref == nil || ref.Kind != "CronJob" || ref.APIVersion != "batch/v1" || ref.Name != cj.Name || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("job %s: controller reference %+v", j.Name, ref)
	}
	if j.Labels["cron"] != cj.Name {
		t.Errorf("job %s: labels %v, want the template's", j.Name, j.Labels)
	}
	return minute
}

// finishJob writes a Job's status as the Job controller does when its one
// pod succeeded.
func finishJob(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		j, err := cs.BatchV1().Jobs("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		start := metav1.NewTime(now.Add(-time.Second))
		j.Status = batchv1.JobStatus{StartTime: &start, CompletionTime: &now, Succeeded: 1,
			Conditions: []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now},
			}}
		_, err = cs.BatchV1().Jobs("default").UpdateStatus(ctx, j, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("finishing job %s: %v", name, err)
	}
}

// eventCount sums the count of the Events with reason on the CronJob.
func eventCount(t *testing.T, cs kubernetes.Interface, cj *batchv1.CronJob, reason string) int {
	t.Helper()
	evs, err := cs.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + cj.Name})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs.Items {
		if e.Reason == reason && e.InvolvedObject.UID == cj.UID && e.Source.Component == "cronjob-controller" {
			n += max(int(e.Count), 1)
		}
	}
	return n
}

func cronForbid(t *testing.T, cs kubernetes.Interface) {
	ctx := context.Background()
	cj, err := cs.BatchV1().CronJobs("default").Create(ctx, tickCronJob("tick", batchv1.ForbidConcurrent), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cj.Spec.FailedJobsHistoryLimit == nil || *cj.Spec.FailedJobsHistoryLimit != 1 || cj.Spec.Suspend == nil || *cj.Spec.Suspend {
		t.Errorf("defaults: failedJobsHistoryLimit %v, suspend %v; want 1, false", cj.Spec.FailedJobsHistoryLimit, cj.Spec.Suspend)
	}
	// oneRunning waits for exactly one unfinished Job, checking there is
	// never more than one, and returns it.
	oneRunning := func(after int64) batchv1.Job {
		t.Helper()
		var running batchv1.Job
		harness.Eventually(t, 30*time.Second, func() error {
			var unfinished []batchv1.Job
			for _, j := range cronJobs(t, cs, cj) {
				if !jobFinished(&j) {
					unfinished = append(unfinished, j)
				}
			}
			if len(unfinished) > 1 {
				t.Fatalf("Forbid ran %d Jobs at once: %s, %s", len(unfinished), unfinished[0].Name, unfinished[1].Name)
			}
			if len(unfinished) == 0 {
				return fmt.Errorf("no Job running")
			}
			if m := scheduledMinute(t, cj, &unfinished[0]); m <= after {
				return fmt.Errorf("job %s is not after minute %d", unfinished[0].Name, after)
			}
			running = unfinished[0]
			return nil
		})
		return running
	}

	first := oneRunning(0)
	minute := scheduledMinute(t, cj, &first)
	harness.Eventually(t, 10*time.Second, func() error {
		c, err := cs.BatchV1().CronJobs("default").Get(ctx, cj.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(c.Status.Active) != 1 || c.Status.Active[0].Name != first.Name || c.Status.LastScheduleTime == nil ||
			c.Status.LastScheduleTime.Unix() != minute*60 {
			return fmt.Errorf("status %+v, want %s active and scheduled at minute %d", c.Status, first.Name, minute)
		}
		return nil
	})
	// Schedule minutes pass while the first Job runs: each is skipped.
	harness.Eventually(t, 30*time.Second, func() error {
		if n := eventCount(t, cs, cj, "JobAlreadyActive"); n < 2 {
			return fmt.Errorf("%d JobAlreadyActive events, want 2", n)
		}
		return nil
	})
	if jobs := cronJobs(t, cs, cj); len(jobs) != 1 {
		t.Fatalf("jobs while the first runs: %d, want 1", len(jobs))
	}

	// Finished Jobs free the schedule: one new Job each time, each for a
	// later minute, never two at once.
	names := []string{first.Name}
	for i := 0; i < 3; i++ {
		finishJob(t, cs, names[len(names)-1])
		next := oneRunning(minute)
		minute = scheduledMinute(t, cj, &next)
		names = append(names, next.Name)
	}
	// Three finished, history limit two: the oldest goes.
	harness.Eventually(t, 20*time.Second, func() error {
		var finished []string
		for _, j := range cronJobs(t, cs, cj) {
			if jobFinished(&j) {
				finished = append(finished, j.Name)
			}
		}
		if !slices.Equal(finished, names[1:3]) {
			return fmt.Errorf("finished jobs %v, want %v", finished, names[1:3])
		}
		return nil
	})
	c, err := cs.BatchV1().CronJobs("default").Get(ctx, cj.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Status.LastSuccessfulTime == nil {
		t.Error("no lastSuccessfulTime")
	}
	for reason, least := range map[string]int{"SuccessfulCreate": 4, "SawCompletedJob": 3, "SuccessfulDelete": 1} {
		if n := eventCount(t, cs, cj, reason); n < least {
			t.Errorf("%d %s events, want at least %d", n, reason, least)
		}
	}
}

func cronReplace(t *testing.T, cs kubernetes.Interface) {
	ctx := context.Background()
	cj, err := cs.BatchV1().CronJobs("default").Create(ctx, tickCronJob("swap", batchv1.ReplaceConcurrent), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var first batchv1.Job
	harness.Eventually(t, 30*time.Second, func() error {
		jobs := cronJobs(t, cs, cj)
		if len(jobs) == 0 {
			return fmt.Errorf("no Job yet")
		}
		first = jobs[0]
		return nil
	})
	firstMinute := scheduledMinute(t, cj, &first)
	// At the next minute the running Job is deleted and another made.
	harness.Eventually(t, 30*time.Second, func() error {
		if _, err := cs.BatchV1().Jobs("default").Get(ctx, first.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("job %s still there (%v)", first.Name, err)
		}
		jobs := cronJobs(t, cs, cj)
		if len(jobs) != 1 {
			return fmt.Errorf("%d jobs, want the one that replaced %s", len(jobs), first.Name)
		}
		if m := scheduledMinute(t, cj, &jobs[0]); m <= firstMinute {
			return fmt.Errorf("job %s is not later than %s", jobs[0].Name, first.Name)
		}
		return nil
	})
	if n := eventCount(t, cs, cj, "SuccessfulDelete"); n < 1 {
		t.Errorf("no SuccessfulDelete event")
	}
}

// cronCreateJobFrom: `kubectl create job NAME --from=cronjob/CJ` reads the
// CronJob and creates a Job from its template that the CronJob controls,
// marked as instantiated by hand; `kubectl get cronjob` prints upstream's
// columns.
func cronCreateJobFrom(t *testing.T, s *harness.Server, cs kubernetes.Interface, kubectl, name string) {
	ctx := context.Background()
	tmpl := tickCronJob(name, batchv1.ForbidConcurrent)
	tmpl.Spec.Schedule = "0 3 * * *"
	tmpl.Spec.TimeZone = new("Europe/Berlin")
	tmpl.Spec.Suspend = new(true)
	cj, err := cs.BatchV1().CronJobs("default").Create(ctx, tmpl, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := s.MustRun(t, kubectl, "", "get", "cronjob", name)
	header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
	if want := []string{"NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"}; !slices.Equal(header, want) {
		t.Errorf("kubectl get cronjob header %v, want %v", header, want)
	}
	if !strings.Contains(out, "0 3 * * *") || !strings.Contains(out, "Europe/Berlin") || !strings.Contains(out, "True") {
		t.Errorf("kubectl get cronjob:\n%s", out)
	}
	wide := s.MustRun(t, kubectl, "", "get", "cronjob", name, "-o", "wide")
	if h := strings.Fields(strings.SplitN(wide, "\n", 2)[0]); !slices.Equal(h[len(h)-3:], []string{"CONTAINERS", "IMAGES", "SELECTOR"}) {
		t.Errorf("kubectl get cronjob -o wide header %v", h)
	}

	jobName := name + "-manual"
	if out := s.MustRun(t, kubectl, "", "create", "job", jobName, "--from=cronjob/"+name); !strings.Contains(out, "job.batch/"+jobName+" created") {
		t.Errorf("kubectl create job: %q", out)
	}
	j, err := cs.BatchV1().Jobs("default").Get(ctx, jobName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Annotations["cronjob.kubernetes.io/instantiate"] != "manual" {
		t.Errorf("annotations %v, want cronjob.kubernetes.io/instantiate=manual", j.Annotations)
	}
	ref := metav1.GetControllerOf(j)
	if ref == nil || ref.UID != cj.UID || ref.Kind != "CronJob" || ref.APIVersion != "batch/v1" || ref.Name != name {
		t.Errorf("controller reference %+v, want the CronJob %s", ref, cj.UID)
	}
	if j.Labels["cron"] != name || len(j.Spec.Template.Spec.Containers) != 1 || j.Spec.Template.Spec.Containers[0].Image != "busybox" {
		t.Errorf("job %+v is not made from the template", j)
	}
	desc := s.MustRun(t, kubectl, "", "describe", "cronjob", name)
	for _, want := range []string{"Schedule:", "0 3 * * *", "Concurrency Policy:", "Forbid", "Suspend:", "True"} {
		if !strings.Contains(desc, want) {
			t.Errorf("kubectl describe cronjob has no %q:\n%s", want, desc)
		}
	}
	// The Job is the CronJob's: deleting the CronJob deletes it.
	if err := cs.BatchV1().CronJobs("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 30*time.Second, func() error {
		if _, err := cs.BatchV1().Jobs("default").Get(ctx, jobName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("job %s still there after its CronJob was deleted (%v)", jobName, err)
		}
		return nil
	})
}

// TestIntegrationCronJobRunsOnNode: on the all-in-one's real node, the
// CronJob's Jobs run their busybox pod to completion through the Job
// controller, and the CronJob controller sees them finish: the next
// schedule minute gets a new Job, lastSuccessfulTime advances, and the
// finished Jobs beyond the history limit are deleted.
func TestIntegrationCronJobRunsOnNode(t *testing.T) {
	s, _ := harness.StartServerWithNode(t, fmt.Sprint("--cronjob-clock-speed=", cronClockSpeed))
	cs := s.Clientset(t)
	ctx := context.Background()
	tmpl := tickCronJob("real", batchv1.ForbidConcurrent)
	tmpl.Spec.JobTemplate.Spec.ManagedBy = nil // the built-in Job controller's
	tmpl.Spec.SuccessfulJobsHistoryLimit = new(int32(1))
	tmpl.Spec.JobTemplate.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent // the imported busybox
	cj, err := cs.BatchV1().CronJobs("default").Create(ctx, tmpl, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, 2*time.Minute, func() error {
		if n := eventCount(t, cs, cj, "SawCompletedJob"); n < 2 {
			return fmt.Errorf("%d SawCompletedJob events, want 2", n)
		}
		return nil
	})
	c, err := cs.BatchV1().CronJobs("default").Get(ctx, cj.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Status.LastSuccessfulTime == nil {
		t.Error("no lastSuccessfulTime after Jobs completed")
	}
	harness.Eventually(t, time.Minute, func() error {
		complete := 0
		for _, j := range cronJobs(t, cs, cj) {
			if jobFinished(&j) {
				complete++
			}
		}
		if complete != 1 {
			return fmt.Errorf("%d finished Jobs kept, want 1 (successfulJobsHistoryLimit)", complete)
		}
		return nil
	})
	// Stop the schedule before the pods are cleaned up. The controller
	// writes the CronJob's status meanwhile, so the update re-reads it on
	// a conflict.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := cs.BatchV1().CronJobs("default").Get(ctx, cj.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c.Spec.Suspend = new(true)
		_, err = cs.BatchV1().CronJobs("default").Update(ctx, c, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

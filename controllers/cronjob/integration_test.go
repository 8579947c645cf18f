package cronjob_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/controllers/cronjob"
	"github.com/kubebus/kubebus/test/harness"
)

// startController runs the CronJob controller on bus-fed caches, with a
// fake clock, against a `kubebus server` that runs no controllers of its
// own.
func startController(t *testing.T, clock cronjob.Clock) kubernetes.Interface {
	t.Helper()
	s := harness.StartServer(t, "", "--disable-controller-manager", "--disable-scheduler", harness.NoServiceAccounts)
	cs := s.Clientset(t)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	nc, js := s.BusConnect(t, "system:kube-controller-manager")
	inf, err := cache.New(cache.Config{JetStream: js, Component: "test-kcm", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rec, stopRec := controllers.Recorder(ctx, cs, "cronjob-controller")
	c, err := cronjob.New(cronjob.Config{Client: cs, Jobs: inf.Jobs, CronJobs: inf.CronJobs, Recorder: rec, Logger: logger, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	m := &controllers.Manager{Client: cs, Lease: controllers.LeaseConfig{Disabled: true}, Logger: logger}
	m.AddCache(inf)
	m.Add(c)
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		stopRec()
		nc.Close()
	})
	return cs
}

// TestIntegrationForbidEveryMinute: with the clock stepped a minute at a
// time, "*/1 * * * *" with Forbid creates the Job of each minute through
// the real API server and bus, and none while one runs.
func TestIntegrationForbidEveryMinute(t *testing.T) {
	harness.SkipShort(t)
	clock := cronjob.NewFakeClock(time.Now())
	cs := startController(t, clock)
	ctx := context.Background()
	cj, err := cs.BatchV1().CronJobs("default").Create(ctx, &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "tick"},
		Spec: batchv1.CronJobSpec{Schedule: "*/1 * * * *", ConcurrencyPolicy: batchv1.ForbidConcurrent,
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	minute := cj.CreationTimestamp.Truncate(time.Minute)
	// tick moves the clock to a second past the next minute and wakes the
	// controller (the work queue waits in real time; the test does not).
	n := 0
	tick := func() time.Time {
		t.Helper()
		minute = minute.Add(time.Minute)
		clock.Set(minute.Add(time.Second))
		n++
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"test/tick":"%d"}}}`, n)
		if _, err := cs.BatchV1().CronJobs("default").Patch(ctx, "tick", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		return minute
	}
	jobs := func() []batchv1.Job {
		t.Helper()
		list, err := cs.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	waitJob := func(scheduled time.Time) {
		t.Helper()
		name := cronjob.JobName(cj, scheduled)
		harness.Eventually(t, 20*time.Second, func() error {
			c, err := cs.BatchV1().CronJobs("default").Get(ctx, "tick", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if len(c.Status.Active) != 1 || c.Status.Active[0].Name != name {
				return fmt.Errorf("active %v, want %s", c.Status.Active, name)
			}
			return nil
		})
	}

	first := tick()
	waitJob(first)
	// Two minutes pass while it runs: nothing new, JobAlreadyActive.
	for i := 0; i < 2; i++ {
		tick()
	}
	harness.Eventually(t, 20*time.Second, func() error {
		evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=tick"})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == "JobAlreadyActive" && e.Count >= 2 {
				return nil
			}
		}
		return fmt.Errorf("no JobAlreadyActive event counted twice")
	})
	if got := jobs(); len(got) != 1 {
		t.Fatalf("%d jobs while the first runs, want 1", len(got))
	}

	// The Job finishes (as the Job controller would record it): the most
	// recent minute skipped gets its Job at once, as upstream.
	j, err := cs.BatchV1().Jobs("default").Get(ctx, cronjob.JobName(cj, first), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(clock.Now())
	j.Status = batchv1.JobStatus{StartTime: &now, CompletionTime: &now, Succeeded: 1, Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now}}}
	if _, err := cs.BatchV1().Jobs("default").UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	next := minute
	waitJob(next)
	var names []string
	for _, j := range jobs() {
		names = append(names, j.Name)
	}
	if len(names) != 2 || !strings.Contains(strings.Join(names, " "), cronjob.JobName(cj, next)) {
		t.Errorf("jobs %v, want the first and %s", names, cronjob.JobName(cj, next))
	}
}

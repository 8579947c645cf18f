package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
	"github.com/kubebus/kubebus/test/prereq"
)

// TestIntegrationJob runs Jobs on the all-in-one's real node with busybox:
// five completions two at a time, a pod that exits 1 backing off until
// BackoffLimitExceeded, an Indexed Job whose pods echo their index, the
// stock kubectl 1.32 and 1.33 waiting for condition=complete, and a
// finished Job with ttlSecondsAfterFinished deleted by the TTL controller.
func TestIntegrationJob(t *testing.T) {
	s, node := harness.StartServerWithNode(t)
	cs := s.Clientset(t)
	kubectl := harness.Kubectl(t)
	// Jobs go before the pods (cleanups run last first): a Job would
	// replace the pods the harness deletes.
	t.Cleanup(func() {
		bg := metav1.DeletePropagationBackground
		_ = cs.BatchV1().Jobs("default").DeleteCollection(context.Background(), metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{})
	})

	t.Run("completions 5 at parallelism 2", func(t *testing.T) {
		j := busyboxJob("five", "sleep 1")
		j.Spec.Completions, j.Spec.Parallelism = new(int32(5)), new(int32(2))
		createJob(t, cs, j)
		most := 0
		done := waitJob(t, cs, "five", 3*time.Minute, func(j *batchv1.Job) bool {
			pods := jobPods(t, cs, "five")
			running := 0
			for _, p := range pods {
				if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
					running++
				}
			}
			most = max(most, running, int(j.Status.Active))
			if most > 2 {
				t.Fatalf("%d pods active at once, parallelism is 2", most)
			}
			return jobCondition(j, batchv1.JobComplete) != nil
		})
		if done.Status.Succeeded != 5 || done.Status.Failed != 0 || done.Status.Active != 0 || done.Status.CompletionTime == nil || done.Status.StartTime == nil {
			t.Fatalf("finished status %+v", done.Status)
		}
		for _, ct := range []batchv1.JobConditionType{batchv1.JobSuccessCriteriaMet, batchv1.JobComplete} {
			if c := jobCondition(done, ct); c == nil || c.Reason != batchv1.JobReasonCompletionsReached {
				t.Fatalf("condition %s = %+v, want reason %s", ct, c, batchv1.JobReasonCompletionsReached)
			}
		}
		pods := jobPods(t, cs, "five")
		succeeded := 0
		for _, p := range pods {
			if p.Spec.NodeName != node.Name {
				t.Fatalf("pod %s ran on %q", p.Name, p.Spec.NodeName)
			}
			if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
				t.Errorf("pod %s still has the tracking finalizer", p.Name)
			}
			if p.Status.Phase == corev1.PodSucceeded {
				succeeded++
			}
		}
		if succeeded != 5 {
			t.Fatalf("%d pods succeeded, want 5", succeeded)
		}
		out := s.MustRun(t, kubectl, "", "get", "job", "five")
		if f := strings.Fields(strings.Split(strings.TrimSpace(out), "\n")[1]); len(f) < 5 || f[1] != "Complete" || f[2] != "5/5" {
			t.Fatalf("kubectl get job:\n%s", out)
		}
		waitJobEvent(t, cs, "five", "Completed")
		waitJobEvent(t, cs, "five", "SuccessfulCreate")
	})

	t.Run("backoff limit exceeded", func(t *testing.T) {
		j := busyboxJob("fails", "sleep 1; echo failing; exit 1")
		j.Spec.BackoffLimit = new(int32(1))
		createJob(t, cs, j)
		done := waitJob(t, cs, "fails", 3*time.Minute, func(j *batchv1.Job) bool { return jobCondition(j, batchv1.JobFailed) != nil })
		failed := jobCondition(done, batchv1.JobFailed)
		if failed.Reason != batchv1.JobReasonBackoffLimitExceeded || jobCondition(done, batchv1.JobFailureTarget) == nil {
			t.Fatalf("conditions %+v", done.Status.Conditions)
		}
		if done.Status.Failed != 2 || done.Status.Succeeded != 0 || jobCondition(done, batchv1.JobComplete) != nil {
			t.Fatalf("status %+v", done.Status)
		}
		// The second pod came after the back-off (10s) from the first's failure.
		pods := jobPods(t, cs, "fails")
		if len(pods) != 2 {
			t.Fatalf("%d pods, want 2", len(pods))
		}
		slices.SortFunc(pods, func(a, b corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
		first := pods[0].Status.ContainerStatuses
		if len(first) != 1 || first[0].State.Terminated == nil || first[0].State.Terminated.ExitCode != 1 {
			t.Fatalf("first pod's container %+v", first)
		}
		if gap := pods[1].CreationTimestamp.Sub(first[0].State.Terminated.FinishedAt.Time); gap < 9*time.Second {
			t.Fatalf("the second pod came %v after the first failed; the back-off is 10s", gap)
		}
		waitJobEvent(t, cs, "fails", batchv1.JobReasonBackoffLimitExceeded)
		out := s.MustRun(t, kubectl, "", "get", "job", "fails", "--no-headers")
		if f := strings.Fields(out); len(f) < 3 || f[1] != "Failed" || f[2] != "0/1" {
			t.Fatalf("kubectl get job: %s", out)
		}
	})

	t.Run("indexed pods see their index", func(t *testing.T) {
		j := busyboxJob("indexed", `echo "index=$JOB_COMPLETION_INDEX host=$(hostname)"; sleep 1`)
		j.Spec.Completions, j.Spec.Parallelism = new(int32(3)), new(int32(3))
		j.Spec.CompletionMode = new(batchv1.IndexedCompletion)
		createJob(t, cs, j)
		done := waitJob(t, cs, "indexed", 3*time.Minute, func(j *batchv1.Job) bool { return jobCondition(j, batchv1.JobComplete) != nil })
		if done.Status.CompletedIndexes != "0-2" || done.Status.Succeeded != 3 {
			t.Fatalf("status %+v", done.Status)
		}
		seen := map[string]bool{}
		for _, p := range jobPods(t, cs, "indexed") {
			ix := p.Annotations[batchv1.JobCompletionIndexAnnotation]
			if ix == "" || p.Labels[batchv1.JobCompletionIndexAnnotation] != ix {
				t.Fatalf("pod %s: annotations %v labels %v", p.Name, p.Annotations, p.Labels)
			}
			logs := strings.TrimSpace(s.MustRun(t, kubectl, "", "logs", p.Name))
			if want := fmt.Sprintf("index=%s host=indexed-%s", ix, ix); logs != want {
				t.Fatalf("pod %s logged %q, want %q", p.Name, logs, want)
			}
			seen[ix] = true
		}
		if len(seen) != 3 {
			t.Fatalf("indexes %v", seen)
		}
	})

	for _, minor := range []string{"1.32", "1.33"} {
		t.Run("kubectl "+minor+" wait --for=condition=complete", func(t *testing.T) {
			bin := harness.PinnedKubectl(t, minor)
			if bin == "" {
				prereq.Missing(t, "kubectl.%s not found on PATH or beside the stock kubectl", minor)
			}
			name := "wait-" + strings.ReplaceAll(minor, ".", "")
			createJob(t, cs, busyboxJob(name, "sleep 2"))
			out := s.MustRun(t, bin, "", "wait", "--for=condition=complete", "--timeout=120s", "job/"+name)
			if !strings.Contains(out, "job.batch/"+name+" condition met") {
				t.Fatalf("kubectl wait: %q", out)
			}
			j, err := cs.BatchV1().Jobs("default").Get(context.Background(), name, metav1.GetOptions{})
			if err != nil || jobCondition(j, batchv1.JobComplete) == nil {
				t.Fatalf("after kubectl wait: %v %+v", err, j.Status)
			}
		})
	}

	t.Run("ttl after finished", func(t *testing.T) {
		j := busyboxJob("ttl", "sleep 1")
		j.Spec.TTLSecondsAfterFinished = new(int32(2))
		createJob(t, cs, j)
		done := waitJob(t, cs, "ttl", 2*time.Minute, func(j *batchv1.Job) bool { return jobCondition(j, batchv1.JobComplete) != nil })
		finished := jobCondition(done, batchv1.JobComplete).LastTransitionTime.Time
		harness.Eventually(t, time.Minute, func() error {
			_, err := cs.BatchV1().Jobs("default").Get(context.Background(), "ttl", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("job still there (%v)", err)
		})
		if gone := time.Since(finished); gone < 2*time.Second {
			t.Fatalf("deleted %v after finishing, before its TTL of 2s", gone)
		}
		// Background propagation: the garbage collector removes its pods.
		harness.Eventually(t, time.Minute, func() error {
			if n := len(jobPods(t, cs, "ttl")); n > 0 {
				return fmt.Errorf("%d pods left", n)
			}
			return nil
		})
	})
}

// busyboxJob is a Job of one busybox pod running script, never restarted.
// The scripts run a second at least: the local kubelet has been seen to
// miss the exit of a container that exits at once (reported Running).
func busyboxJob(name, script string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: new(int64(1)),
			Containers: []corev1.Container{{Name: "work", Image: "busybox:latest", ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sh", "-c", script}}},
		}}},
	}
}

func createJob(t *testing.T, cs kubernetes.Interface, j *batchv1.Job) {
	t.Helper()
	got, err := cs.BatchV1().Jobs("default").Create(context.Background(), j, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The API server generated the selector from the Job's UID.
	uid := string(got.UID)
	if got.Spec.Selector == nil || got.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] != uid ||
		got.Spec.Template.Labels[batchv1.JobNameLabel] != j.Name || got.Spec.Template.Labels["controller-uid"] != uid ||
		*got.Spec.BackoffLimit != ptrOr(j.Spec.BackoffLimit, 6) || got.Spec.CompletionMode == nil {
		t.Fatalf("created job spec %+v labels %v", got.Spec, got.Spec.Template.Labels)
	}
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// waitJob polls the Job until done says so, calling done on each version.
func waitJob(t *testing.T, cs kubernetes.Interface, name string, timeout time.Duration, done func(*batchv1.Job) bool) *batchv1.Job {
	t.Helper()
	var last *batchv1.Job
	harness.Eventually(t, timeout, func() error {
		j, err := cs.BatchV1().Jobs("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		last = j
		if !done(j) {
			return fmt.Errorf("job %s: active %d succeeded %d failed %d conditions %v", name, j.Status.Active, j.Status.Succeeded, j.Status.Failed, j.Status.Conditions)
		}
		return nil
	})
	return last
}

func jobCondition(j *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range j.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

func jobPods(t *testing.T, cs kubernetes.Interface, job string) []corev1.Pod {
	t.Helper()
	return podsOf(t, cs, "default", batchv1.JobNameLabel+"="+job)
}

// waitJobEvent waits for an Event of reason about the Job.
func waitJobEvent(t *testing.T, cs kubernetes.Interface, job, reason string) {
	t.Helper()
	harness.Eventually(t, 30*time.Second, func() error {
		evs, err := cs.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "Job" && e.InvolvedObject.Name == job && e.Reason == reason {
				return nil
			}
		}
		return fmt.Errorf("no %s event for job %s", reason, job)
	})
}

// TestIntegrationJobControllerRestart: a Job of 30 completions, 5 at a
// time, on hollow nodes whose pods finish after a second; its
// controller-manager is killed (SIGKILL) twice while pods finish. Every
// pod's outcome is counted exactly once: the Job completes with as many
// successes in its status as there are succeeded pods, and no pod keeps
// the tracking finalizer.
func TestIntegrationJobControllerRestart(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", "--disable-controller-manager")
	kcm := harness.StartControllerManager(t, s, shortLease...)
	harness.StartHollowNodes(t, s, 5, "--simulate-pod-runtime=1s")
	cs := s.Clientset(t)
	ctx := context.Background()
	harness.Eventually(t, time.Minute, func() error {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	j := busyboxJob("restart", "true")
	j.Spec.Completions, j.Spec.Parallelism = new(int32(30)), new(int32(5))
	createJob(t, cs, j)
	for _, at := range []int32{5, 15} {
		waitJob(t, cs, "restart", 2*time.Minute, func(j *batchv1.Job) bool { return j.Status.Succeeded >= at })
		kcm.Kill()
		kcm.Start(t)
	}
	done := waitJob(t, cs, "restart", 3*time.Minute, func(j *batchv1.Job) bool { return jobCondition(j, batchv1.JobComplete) != nil })
	var succeeded int32
	for _, p := range jobPods(t, cs, "restart") {
		if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
			t.Errorf("pod %s (%s) still has the tracking finalizer", p.Name, p.Status.Phase)
		}
		if p.Status.Phase == corev1.PodSucceeded {
			succeeded++
		}
	}
	if done.Status.Succeeded != succeeded || done.Status.Succeeded < 30 || done.Status.Failed != 0 {
		t.Fatalf("status: %d succeeded, %d failed; %d pods succeeded", done.Status.Succeeded, done.Status.Failed, succeeded)
	}
	if u := done.Status.UncountedTerminatedPods; u != nil && len(u.Succeeded)+len(u.Failed) > 0 {
		t.Fatalf("uncounted pods left: %+v", u)
	}
	if succeeded > 30 {
		t.Logf("%d pods succeeded for 30 completions (created by a restarted controller before its cache showed the earlier ones)", succeeded)
	}
}

// TestIntegrationJobPolicies runs Jobs on hollow nodes, whose pods finish
// as their simulate.kubebus.io annotations say: a FailJob rule of the pod
// failure policy, activeDeadlineSeconds, suspend and resume, and a pod
// restarted in place (OnFailure) past backoffLimit.
func TestIntegrationJobPolicies(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "")
	harness.StartHollowNodes(t, s, 3, "--simulate-pod-runtime=1s")
	cs := s.Clientset(t)
	ctx := context.Background()
	harness.Eventually(t, time.Minute, func() error {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	hollow := func(name string, annotations map[string]string) *batchv1.Job {
		j := busyboxJob(name, "true")
		j.Spec.Template.Annotations = annotations
		return j
	}

	t.Run("pod failure policy FailJob", func(t *testing.T) {
		j := hollow("policy", map[string]string{"simulate.kubebus.io/exit-code": "42"})
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
			{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}}},
			{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
		}}
		createJob(t, cs, j)
		done := waitJob(t, cs, "policy", time.Minute, func(j *batchv1.Job) bool { return jobCondition(j, batchv1.JobFailed) != nil })
		c := jobCondition(done, batchv1.JobFailed)
		if c.Reason != batchv1.JobReasonPodFailurePolicy || !strings.Contains(c.Message, "exit code 42 matching FailJob rule at index 1") {
			t.Fatalf("failed condition %+v", c)
		}
		if done.Status.Failed != 1 || len(jobPods(t, cs, "policy")) != 1 {
			t.Fatalf("status %+v", done.Status)
		}
	})

	t.Run("active deadline", func(t *testing.T) {
		j := hollow("deadline", map[string]string{"simulate.kubebus.io/runtime": "10m"})
		j.Spec.ActiveDeadlineSeconds = new(int64(2))
		createJob(t, cs, j)
		done := waitJob(t, cs, "deadline", time.Minute, func(j *batchv1.Job) bool { return jobCondition(j, batchv1.JobFailed) != nil })
		if c := jobCondition(done, batchv1.JobFailed); c.Reason != batchv1.JobReasonDeadlineExceeded || done.Status.Active != 0 {
			t.Fatalf("status %+v", done.Status)
		}
		if took := jobCondition(done, batchv1.JobFailed).LastTransitionTime.Sub(done.Status.StartTime.Time); took < 2*time.Second {
			t.Fatalf("failed %v after starting, before its deadline", took)
		}
	})

	t.Run("suspend and resume", func(t *testing.T) {
		j := hollow("pause", map[string]string{"simulate.kubebus.io/runtime": "10m"})
		j.Spec.Parallelism, j.Spec.Completions = new(int32(2)), new(int32(2))
		createJob(t, cs, j)
		waitJob(t, cs, "pause", time.Minute, func(j *batchv1.Job) bool { return j.Status.Active == 2 })
		patch := func(suspend bool) {
			t.Helper()
			body := fmt.Sprintf(`{"spec":{"suspend":%t}}`, suspend)
			if _, err := cs.BatchV1().Jobs("default").Patch(ctx, "pause", "application/merge-patch+json", []byte(body), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		patch(true)
		susp := waitJob(t, cs, "pause", time.Minute, func(j *batchv1.Job) bool {
			return jobCondition(j, batchv1.JobSuspended) != nil && j.Status.Active == 0 && len(jobPods(t, cs, "pause")) == 0
		})
		if susp.Status.Failed != 0 {
			t.Fatalf("suspending counted failures: %+v", susp.Status)
		}
		start := susp.Status.StartTime
		patch(false)
		resumed := waitJob(t, cs, "pause", time.Minute, func(j *batchv1.Job) bool {
			c := findJobCondition(j, batchv1.JobSuspended)
			return c != nil && c.Status == corev1.ConditionFalse && j.Status.Active == 2
		})
		// The start time is set anew on resume (seconds granularity).
		if c := findJobCondition(resumed, batchv1.JobSuspended); c.Reason != "JobResumed" || resumed.Status.StartTime.Before(start) ||
			!resumed.Status.StartTime.Equal(&c.LastTransitionTime) {
			t.Fatalf("resumed %+v (started %v before)", resumed.Status, start)
		}
		waitJobEvent(t, cs, "pause", "Suspended")
		waitJobEvent(t, cs, "pause", "Resumed")
	})

	t.Run("OnFailure restarts count toward backoffLimit", func(t *testing.T) {
		j := hollow("restarts", map[string]string{"simulate.kubebus.io/exit-code": "1"})
		j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		j.Spec.BackoffLimit = new(int32(2))
		createJob(t, cs, j)
		done := waitJob(t, cs, "restarts", time.Minute, func(j *batchv1.Job) bool { return jobCondition(j, batchv1.JobFailed) != nil })
		if c := jobCondition(done, batchv1.JobFailed); c.Reason != batchv1.JobReasonBackoffLimitExceeded {
			t.Fatalf("failed condition %+v", c)
		}
	})
}

func findJobCondition(j *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range j.Status.Conditions {
		if c.Type == t {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

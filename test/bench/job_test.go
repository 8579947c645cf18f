package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
)

const (
	jobNodes       = 100
	jobCompletions = 1000
	jobParallelism = 100
	// jobPodRuntime is how long each hollow pod runs before it exits 0.
	jobPodRuntime = time.Second
)

// BenchmarkJob1000: a Job of 1,000 completions at parallelism 100 on 100
// hollow nodes (`kubebus server` plus `kubebus kubelet --simulate=100
// --simulate-pod-runtime=1s`): seconds from the Job's creation to its
// Complete condition, and where the time goes, as means over its pods:
// from creation to binding (scheduler), to Running (hollow kubelet), to
// Succeeded (the 1s runtime), to losing the tracking finalizer (the Job
// controller counting it), and from a pod's success to the creation of
// the pod that takes its place (the Job controller's next sync); plus the
// API writes the Job controller made per completion.
func BenchmarkJob1000(b *testing.B) {
	s := harness.StartServer(b, "")
	harness.StartHollowNodes(b, s, jobNodes, fmt.Sprint("--simulate-pod-runtime=", jobPodRuntime))
	cfg := s.RESTConfig(b)
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	waitNodesReady(ctx, b, cs, jobNodes, 3*time.Minute)
	waitSchedulerSeesNode(ctx, b, cs, fmt.Sprintf("hollow-%d", jobNodes-1))
	b.ResetTimer()
	for iter := 0; iter < b.N; iter++ {
		b.StopTimer()
		ns := fmt.Sprintf("job-%d", iter)
		createNamespace(ctx, b, cs, ns)
		w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		stagesCh := make(chan jobStages, 1)
		go func() { stagesCh <- watchJobPods(w.ResultChan()) }()
		statusWrites := s.APIRequests(b, `resource="jobs"`, `subresource="status"`)
		podPatches := s.APIRequests(b, `resource="pods"`, `verb="patch"`)
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "batch"}, Spec: batchv1.JobSpec{
			Completions: new(int32(jobCompletions)), Parallelism: new(int32(jobParallelism)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "work", Image: "busybox", Command: []string{"true"}}}}}}}
		jw, err := cs.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		completeCh := make(chan *batchv1.Job, 1)
		go func() { completeCh <- watchComplete(jw.ResultChan()) }()
		b.StartTimer()
		created := time.Now()
		if _, err := cs.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		var done *batchv1.Job
		select {
		case done = <-completeCh:
		case <-time.After(15 * time.Minute):
			b.Fatal("the Job did not complete in 15 minutes")
		}
		elapsed := time.Since(created)
		b.StopTimer()
		if done == nil {
			b.Fatal("the Job watch ended before the Job completed")
		}
		jw.Stop()
		w.Stop()
		st := <-stagesCh
		if done.Status.Succeeded != jobCompletions || done.Status.Failed != 0 {
			b.Fatalf("finished with %d succeeded, %d failed", done.Status.Succeeded, done.Status.Failed)
		}
		if st.pods != jobCompletions || st.maxActive > jobParallelism {
			b.Fatalf("%d pods, %d active at once", st.pods, st.maxActive)
		}
		b.ReportMetric(elapsed.Seconds(), "s-to-complete")
		b.ReportMetric(float64(jobCompletions)/elapsed.Seconds(), "completions/s")
		b.ReportMetric(st.first.Sub(created).Seconds(), "s-first-pod")
		b.ReportMetric(mean(st.schedule), "s-mean-schedule")
		b.ReportMetric(mean(st.start), "s-mean-start")
		b.ReportMetric(mean(st.run), "s-mean-run")
		b.ReportMetric(mean(st.count), "s-mean-count")
		b.ReportMetric(mean(st.replace), "s-mean-replace")
		b.ReportMetric(created.Add(elapsed).Sub(st.lastSucceeded).Seconds(), "s-last-success-to-complete")
		b.ReportMetric((s.APIRequests(b, `resource="jobs"`, `subresource="status"`)-statusWrites)/jobCompletions, "status-writes/completion")
		b.ReportMetric((s.APIRequests(b, `resource="pods"`, `verb="patch"`)-podPatches)/jobCompletions, "pod-patches/completion")
	}
}

// watchComplete returns the Job once a watch shows it Complete (nil if
// the watch ends first).
func watchComplete(events <-chan watch.Event) *batchv1.Job {
	for ev := range events {
		j, ok := ev.Object.(*batchv1.Job)
		if !ok {
			continue
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return j
			}
		}
	}
	return nil
}

// jobStages are the per-pod durations of a Job's run.
type jobStages struct {
	pods, maxActive                      int
	first, lastSucceeded                 time.Time
	schedule, start, run, count, replace []time.Duration
}

func mean(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return (sum / time.Duration(len(ds))).Seconds()
}

// watchJobPods follows the Job's pods until the watch ends.
func watchJobPods(events <-chan watch.Event) jobStages {
	type pod struct{ created, bound, running, succeeded, counted time.Time }
	pods := map[string]*pod{}
	var st jobStages
	active := map[string]bool{}
	for ev := range events {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		now := time.Now()
		x := pods[p.Name]
		if x == nil {
			x = &pod{created: now}
			pods[p.Name] = x
		}
		if x.bound.IsZero() && p.Spec.NodeName != "" {
			x.bound = now
		}
		if x.running.IsZero() && p.Status.Phase == corev1.PodRunning {
			x.running = now
		}
		if x.succeeded.IsZero() && p.Status.Phase == corev1.PodSucceeded {
			x.succeeded = now
		}
		if x.counted.IsZero() && !x.succeeded.IsZero() && !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
			x.counted = now
		}
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && ev.Type != watch.Deleted {
			active[p.Name] = true
		} else {
			delete(active, p.Name)
		}
		st.maxActive = max(st.maxActive, len(active))
	}
	var creations, successes []time.Time
	for _, x := range pods {
		creations = append(creations, x.created)
		if !x.succeeded.IsZero() {
			successes = append(successes, x.succeeded)
			if x.succeeded.After(st.lastSucceeded) {
				st.lastSucceeded = x.succeeded
			}
		}
		if !x.bound.IsZero() {
			st.schedule = append(st.schedule, x.bound.Sub(x.created))
		}
		if !x.running.IsZero() && !x.bound.IsZero() {
			st.start = append(st.start, x.running.Sub(x.bound))
		}
		if !x.succeeded.IsZero() && !x.running.IsZero() {
			st.run = append(st.run, x.succeeded.Sub(x.running))
		}
		if !x.counted.IsZero() {
			st.count = append(st.count, x.counted.Sub(x.succeeded))
		}
	}
	st.pods = len(pods)
	slices.SortFunc(creations, func(a, b time.Time) int { return a.Compare(b) })
	slices.SortFunc(successes, func(a, b time.Time) int { return a.Compare(b) })
	if len(creations) > 0 {
		st.first = creations[0]
	}
	// The k-th success makes room for the (k+parallelism)-th pod.
	for k := 0; k+jobParallelism < len(creations) && k < len(successes); k++ {
		st.replace = append(st.replace, creations[k+jobParallelism].Sub(successes[k]))
	}
	return st
}

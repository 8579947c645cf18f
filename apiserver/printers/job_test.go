package printers

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestJobPrinter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-ago)); return &t }
	cond := func(ct batchv1.JobConditionType) []batchv1.JobCondition {
		return []batchv1.JobCondition{{Type: ct, Status: corev1.ConditionTrue}}
	}
	job := func(mut func(*batchv1.Job)) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", CreationTimestamp: *at(10 * time.Minute)},
			Spec: batchv1.JobSpec{Completions: new(int32(5)), Parallelism: new(int32(2)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "u"}},
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pi", Image: "perl"}}}}}}
		mut(j)
		return j
	}
	tests := []struct {
		name string
		job  *batchv1.Job
		want string
	}{
		{"running", job(func(j *batchv1.Job) { j.Status.StartTime = at(90 * time.Second); j.Status.Succeeded = 2 }),
			"[pi Running 2/5 90s 10m pi perl batch.kubernetes.io/controller-uid=u]"},
		{"complete", job(func(j *batchv1.Job) {
			j.Status.StartTime, j.Status.CompletionTime, j.Status.Succeeded = at(5*time.Minute), at(3*time.Minute), 5
			j.Status.Conditions = cond(batchv1.JobComplete)
		}), "[pi Complete 5/5 2m 10m pi perl batch.kubernetes.io/controller-uid=u]"},
		{"failed", job(func(j *batchv1.Job) { j.Status.Conditions = cond(batchv1.JobFailed) }), "[pi Failed 0/5  10m pi perl batch.kubernetes.io/controller-uid=u]"},
		{"suspended", job(func(j *batchv1.Job) { j.Status.Conditions = cond(batchv1.JobSuspended) }), "[pi Suspended 0/5  10m pi perl batch.kubernetes.io/controller-uid=u]"},
		{"failure target", job(func(j *batchv1.Job) { j.Status.Conditions = cond(batchv1.JobFailureTarget) }), "[pi FailureTarget 0/5  10m pi perl batch.kubernetes.io/controller-uid=u]"},
		{"no completions, parallel", job(func(j *batchv1.Job) { j.Spec.Completions = nil; j.Spec.Parallelism = new(int32(3)) }),
			"[pi Running 0/1 of 3  10m pi perl batch.kubernetes.io/controller-uid=u]"},
		{"terminating", job(func(j *batchv1.Job) { j.DeletionTimestamp = at(0) }), "[pi Terminating 0/5  10m pi perl batch.kubernetes.io/controller-uid=u]"},
	}
	p := For(schema.GroupKind{Group: "batch", Kind: "Job"})
	var names []string
	for _, c := range p.Columns {
		names = append(names, c.Name)
	}
	if got := fmt.Sprint(names); got != "[Name Status Completions Duration Age Containers Images Selector]" {
		t.Fatalf("columns %s", got)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cells, err := p.Cells(tc.job, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(cells); got != tc.want {
				t.Fatalf("cells %s, want %s", got, tc.want)
			}
		})
	}
}

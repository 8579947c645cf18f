package defaults

import (
	"math"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDefaultJob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                              string
		spec                              batchv1.JobSpec
		completions, parallelism, backoff *int32
		replacement                       batchv1.PodReplacementPolicy
	}{
		{"neither completions nor parallelism", batchv1.JobSpec{}, new(int32(1)), new(int32(1)), new(int32(6)), batchv1.TerminatingOrFailed},
		{"parallelism only: no completions", batchv1.JobSpec{Parallelism: new(int32(3))}, nil, new(int32(3)), new(int32(6)), batchv1.TerminatingOrFailed},
		{"completions only", batchv1.JobSpec{Completions: new(int32(5))}, new(int32(5)), new(int32(1)), new(int32(6)), batchv1.TerminatingOrFailed},
		{"per-index limit", batchv1.JobSpec{BackoffLimitPerIndex: new(int32(1))}, new(int32(1)), new(int32(1)), new(int32(math.MaxInt32)), batchv1.TerminatingOrFailed},
		{"failure policy", batchv1.JobSpec{PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}}}}}},
			new(int32(1)), new(int32(1)), new(int32(6)), batchv1.Failed},
	}
	eq := func(a, b *int32) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := &batchv1.Job{Spec: tc.spec}
			Default(j)
			s := j.Spec
			if !eq(s.Completions, tc.completions) || !eq(s.Parallelism, tc.parallelism) || !eq(s.BackoffLimit, tc.backoff) {
				t.Fatalf("completions %v parallelism %v backoffLimit %v", s.Completions, s.Parallelism, s.BackoffLimit)
			}
			if *s.CompletionMode != batchv1.NonIndexedCompletion || *s.Suspend || *s.PodReplacementPolicy != tc.replacement {
				t.Fatalf("mode %v suspend %v replacement %v", *s.CompletionMode, *s.Suspend, *s.PodReplacementPolicy)
			}
			if p := s.PodFailurePolicy; p != nil && p.Rules[0].OnPodConditions[0].Status != corev1.ConditionTrue {
				t.Fatalf("condition pattern status %q", p.Rules[0].OnPodConditions[0].Status)
			}
		})
	}
}

func TestGenerateJobSelector(t *testing.T) {
	t.Parallel()
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", UID: "uid-1"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "pi"}}}}}
	Default(j)
	GenerateJobSelector(j)
	want := map[string]string{"app": "pi", "job-name": "pi", "controller-uid": "uid-1",
		batchv1.JobNameLabel: "pi", batchv1.ControllerUidLabel: "uid-1"}
	for k, v := range want {
		if j.Spec.Template.Labels[k] != v || j.Labels[k] != v {
			t.Errorf("label %s: template %q job %q, want %q", k, j.Spec.Template.Labels[k], j.Labels[k], v)
		}
	}
	if got := j.Spec.Selector.MatchLabels; len(got) != 1 || got[batchv1.ControllerUidLabel] != "uid-1" {
		t.Fatalf("selector %v", got)
	}

	manual := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "m", UID: "uid-2", Labels: map[string]string{"own": "x"}},
		Spec: batchv1.JobSpec{ManualSelector: new(true), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "m"}}}}
	GenerateJobSelector(manual)
	if len(manual.Spec.Selector.MatchLabels) != 1 || manual.Spec.Template.Labels != nil || manual.Labels["own"] != "x" {
		t.Fatalf("a manual selector was changed: %+v", manual)
	}
}

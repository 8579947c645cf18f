package validation

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func validJob(mut func(*batchv1.Job)) *batchv1.Job {
	labels := map[string]string{batchv1.ControllerUidLabel: "uid-1", batchv1.JobNameLabel: "pi"}
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "uid-1", ResourceVersion: "1"},
		Spec: batchv1.JobSpec{
			Completions: new(int32(1)), Parallelism: new(int32(1)), BackoffLimit: new(int32(6)),
			CompletionMode: new(batchv1.NonIndexedCompletion), Suspend: new(false),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: "uid-1"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, DNSPolicy: corev1.DNSClusterFirst, TerminationGracePeriodSeconds: new(int64(30)),
				Containers: []corev1.Container{{Name: "c", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
					TerminationMessagePolicy: corev1.TerminationMessageReadFile, TerminationMessagePath: "/dev/termination-log"}}}},
		},
	}
	if mut != nil {
		mut(j)
	}
	return j
}

func TestValidateJob(t *testing.T) {
	t.Parallel()
	exitRule := func(action batchv1.PodFailurePolicyAction, op batchv1.PodFailurePolicyOnExitCodesOperator, codes ...int32) *batchv1.PodFailurePolicy {
		return &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: action,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: codes}}}}
	}
	tests := []struct {
		name string
		job  *batchv1.Job
		want string // substring of the error; empty: valid
	}{
		{"valid", validJob(nil), ""},
		{"restartPolicy Always", validJob(func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways }), "spec.template.spec.restartPolicy: Unsupported value"},
		{"negative parallelism", validJob(func(j *batchv1.Job) { j.Spec.Parallelism = new(int32(-1)) }), "spec.parallelism"},
		{"negative backoffLimit", validJob(func(j *batchv1.Job) { j.Spec.BackoffLimit = new(int32(-1)) }), "spec.backoffLimit"},
		{"zero activeDeadlineSeconds", validJob(func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = new(int64(0)) }), "spec.activeDeadlineSeconds"},
		{"no selector", validJob(func(j *batchv1.Job) { j.Spec.Selector = nil }), "spec.selector: Required value"},
		{"selector not matching", validJob(func(j *batchv1.Job) {
			j.Spec.ManualSelector = new(true)
			j.Spec.Selector.MatchLabels = map[string]string{"x": "y"}
		}), "`selector` does not match template `labels`"},
		{"a selector not generated", validJob(func(j *batchv1.Job) {
			j.Spec.Template.Labels[batchv1.ControllerUidLabel] = "other"
			j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = "other"
		}), "not auto-generated"},
		{"indexed without completions", validJob(func(j *batchv1.Job) { j.Spec.CompletionMode = new(batchv1.IndexedCompletion); j.Spec.Completions = nil }), "spec.completions: Required value"},
		{"unknown completion mode", validJob(func(j *batchv1.Job) { j.Spec.CompletionMode = new(batchv1.CompletionMode("Sometimes")) }), "spec.completionMode"},
		{"failure policy", validJob(func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = exitRule(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, 1, 42)
		}), ""},
		{"failure policy needs Never", validJob(func(j *batchv1.Job) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			j.Spec.PodFailurePolicy = exitRule(batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyOnExitCodesOpIn, 1)
		}), `only "Never" is supported`},
		{"exit code 0 with In", validJob(func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = exitRule(batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyOnExitCodesOpIn, 0)
		}), "must not be 0"},
		{"unordered exit codes", validJob(func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = exitRule(batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyOnExitCodesOpNotIn, 3, 2)
		}), "increasing order"},
		{"FailIndex without a per-index limit", validJob(func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = exitRule(batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyOnExitCodesOpIn, 1)
		}), "backoffLimitPerIndex"},
		{"a rule with neither requirement", validJob(func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore}}}
		}), "specifying one of OnExitCodes and OnPodConditions is required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			errs := ValidateCreate(tc.job)
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("errors %v, want one with %q", errs, tc.want)
			}
		})
	}
}

func TestValidateJobUpdate(t *testing.T) {
	t.Parallel()
	old := validJob(nil)
	tests := []struct {
		name string
		job  *batchv1.Job
		old  *batchv1.Job
		want string
	}{
		{"parallelism may change", validJob(func(j *batchv1.Job) { j.Spec.Parallelism = new(int32(4)) }), old, ""},
		{"suspend may change", validJob(func(j *batchv1.Job) { j.Spec.Suspend = new(true) }), old, ""},
		{"selector is immutable", validJob(func(j *batchv1.Job) { j.Spec.Selector.MatchLabels[batchv1.JobNameLabel] = "pi" }), old, "spec.selector: Invalid value"},
		{"completions are immutable", validJob(func(j *batchv1.Job) { j.Spec.Completions = new(int32(3)) }), old, "spec.completions"},
		{"template is immutable", validJob(func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "other" }), old, "spec.template"},
		{"a suspended Job's node selector may change", validJob(func(j *batchv1.Job) {
			j.Spec.Suspend = new(true)
			j.Spec.Template.Spec.NodeSelector = map[string]string{"a": "b"}
		}),
			validJob(func(j *batchv1.Job) { j.Spec.Suspend = new(true) }), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			errs := ValidateUpdate(tc.job, tc.old)
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("errors %v, want one with %q", errs, tc.want)
			}
		})
	}
}

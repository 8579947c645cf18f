package defaults

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
)

func TestDefaultCronJob(t *testing.T) {
	t.Parallel()
	allow, forbid := batchv1.AllowConcurrent, batchv1.ForbidConcurrent
	template := minimalTemplate()
	template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	defaulted := defaultedTemplate()
	defaulted.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	for _, tc := range []struct {
		name string
		in   batchv1.CronJobSpec
		want batchv1.CronJobSpec
	}{
		{
			name: "empty",
			in:   batchv1.CronJobSpec{Schedule: "@hourly", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: template}}},
			want: batchv1.CronJobSpec{Schedule: "@hourly", ConcurrencyPolicy: allow, Suspend: new(false),
				SuccessfulJobsHistoryLimit: new(int32(3)), FailedJobsHistoryLimit: new(int32(1)),
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: defaulted}}},
		},
		{
			name: "set values kept",
			in: batchv1.CronJobSpec{Schedule: "@hourly", ConcurrencyPolicy: forbid, Suspend: new(true),
				SuccessfulJobsHistoryLimit: new(int32(0)), FailedJobsHistoryLimit: new(int32(5)),
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: template, PodFailurePolicy: &batchv1.PodFailurePolicy{
					Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore,
						OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}}}}}}}},
			want: batchv1.CronJobSpec{Schedule: "@hourly", ConcurrencyPolicy: forbid, Suspend: new(true),
				SuccessfulJobsHistoryLimit: new(int32(0)), FailedJobsHistoryLimit: new(int32(5)),
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: defaulted, PodFailurePolicy: &batchv1.PodFailurePolicy{
					Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore,
						OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}}}}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cj := &batchv1.CronJob{Spec: *tc.in.DeepCopy()}
			Default(cj)
			if !apiequality.Semantic.DeepEqual(cj.Spec, tc.want) {
				t.Errorf("defaulted spec differs (-want +got):\n%s", diff.Diff(tc.want, cj.Spec))
			}
		})
	}
}

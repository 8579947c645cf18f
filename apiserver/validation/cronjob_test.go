package validation

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func validCronJob() *batchv1.CronJob {
	tmpl := validTemplate()
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	return defaulted(&batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "backup", Namespace: "default", ResourceVersion: "3"},
		Spec: batchv1.CronJobSpec{Schedule: "*/1 * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}},
	})
}

func TestValidateCronJob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*batchv1.CronJob)
		wants  []want
	}{
		{"valid", func(*batchv1.CronJob) {}, nil},
		{"descriptor", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "@daily" }, nil},
		{"every", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "@every 5m" }, nil},
		{"time zone", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = new("Europe/Berlin") }, nil},
		{"time zone UTC", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = new("Etc/UTC") }, nil},
		{"schedule required", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "" }, []want{required("spec.schedule")}},
		{"schedule parses", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "61 * * * *" }, []want{invalid("spec.schedule")}},
		{"five fields", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "0 0 * * * *" }, []want{invalid("spec.schedule")}},
		{"no TZ in schedule", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "CRON_TZ=UTC 0 * * * *" }, []want{invalid("spec.schedule")}},
		{"unknown time zone", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = new("Mars/Olympus") }, []want{invalid("spec.timeZone")}},
		{"empty time zone", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = new("") }, []want{invalid("spec.timeZone")}},
		{"not Local", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = new("Local") }, []want{invalid("spec.timeZone")}},
		{"zone path", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = new("../etc/passwd") }, []want{invalid("spec.timeZone")}},
		{"deadline not negative", func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = new(int64(-1)) }, []want{invalid("spec.startingDeadlineSeconds")}},
		{"concurrency policy", func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = "Sometimes" }, []want{notSupported("spec.concurrencyPolicy")}},
		{"concurrency policy required", func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = "" }, []want{required("spec.concurrencyPolicy")}},
		{"history limits", func(cj *batchv1.CronJob) {
			cj.Spec.SuccessfulJobsHistoryLimit, cj.Spec.FailedJobsHistoryLimit = new(int32(-1)), new(int32(-2))
		}, []want{invalid("spec.successfulJobsHistoryLimit"), invalid("spec.failedJobsHistoryLimit")}},
		{"zero history", func(cj *batchv1.CronJob) {
			cj.Spec.SuccessfulJobsHistoryLimit, cj.Spec.FailedJobsHistoryLimit = new(int32(0)), new(int32(0))
		}, nil},
		{"name fits the Jobs' names", func(cj *batchv1.CronJob) { cj.Name = strings.Repeat("a", 53) }, []want{invalid("metadata.name")}},
		{"52 characters", func(cj *batchv1.CronJob) { cj.Name = strings.Repeat("a", 52) }, nil},
		{"restart policy required", func(cj *batchv1.CronJob) {
			cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}, []want{
			required("spec.jobTemplate.spec.template.spec.restartPolicy"),
		}},
		{"no selector", func(cj *batchv1.CronJob) {
			cj.Spec.JobTemplate.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
		}, []want{invalid("spec.jobTemplate.spec.selector")}},
		{"no manual selector", func(cj *batchv1.CronJob) { cj.Spec.JobTemplate.Spec.ManualSelector = new(true) }, []want{notSupported("spec.jobTemplate.spec.manualSelector")}},
		{"job counts", func(cj *batchv1.CronJob) { cj.Spec.JobTemplate.Spec.BackoffLimit = new(int32(-1)) }, []want{invalid("spec.jobTemplate.spec.backoffLimit")}},
		{"indexed needs completions", func(cj *batchv1.CronJob) {
			cj.Spec.JobTemplate.Spec.CompletionMode = new(batchv1.IndexedCompletion)
		}, []want{required("spec.jobTemplate.spec.completions")}},
		{"template image", func(cj *batchv1.CronJob) { cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image = "" }, []want{
			required("spec.jobTemplate.spec.template.spec.containers[0].image"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cj := validCronJob()
			tt.change(cj)
			expectErrors(t, ValidateCreate(cj), tt.wants...)
		})
	}
}

func TestValidateCronJobMessages(t *testing.T) {
	t.Parallel()
	cj := validCronJob()
	cj.Spec.Schedule = "TZ=UTC 0 * * * *"
	expectDetail(t, ValidateCreate(cj), "spec.schedule", "cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
	cj = validCronJob()
	cj.Spec.TimeZone = new("Mars/Olympus")
	expectDetail(t, ValidateCreate(cj), "spec.timeZone", "unknown time zone Mars/Olympus")
	cj = validCronJob()
	cj.Name = strings.Repeat("a", 53)
	expectDetail(t, ValidateCreate(cj), "metadata.name", "must be no more than 52 characters")
	cj = validCronJob()
	cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	expectDetail(t, ValidateCreate(cj), "spec.jobTemplate.spec.template.spec.restartPolicy", `valid values: "OnFailure", "Never"`)
}

func TestValidateCronJobUpdate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		old    func(*batchv1.CronJob)
		change func(*batchv1.CronJob)
		wants  []want
	}{
		{"suspend", nil, func(cj *batchv1.CronJob) { cj.Spec.Suspend = new(true) }, nil},
		{"long name kept", func(cj *batchv1.CronJob) { cj.Name = strings.Repeat("a", 60) }, func(cj *batchv1.CronJob) { cj.Spec.Suspend = new(true) }, nil},
		{"TZ in schedule kept", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=UTC 0 * * * *" },
			func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=UTC 5 * * * *" }, nil},
		{"TZ in schedule and time zone", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=UTC 0 * * * *" },
			func(cj *batchv1.CronJob) { cj.Spec.TimeZone = new("Europe/Berlin") }, []want{invalid("spec.schedule")}},
		{"TZ added", nil, func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=UTC 0 * * * *" }, []want{invalid("spec.schedule")}},
		{"bad schedule", nil, func(cj *batchv1.CronJob) { cj.Spec.Schedule = "sometimes" }, []want{invalid("spec.schedule")}},
		{"name immutable", nil, func(cj *batchv1.CronJob) { cj.Name = "other" }, []want{invalid("metadata.name")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			old := validCronJob()
			if tt.old != nil {
				tt.old(old)
			}
			cj := old.DeepCopy()
			tt.change(cj)
			expectErrors(t, ValidateUpdate(cj, old), tt.wants...)
		})
	}
}

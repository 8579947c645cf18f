package validation

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// cronJobNameMax is the longest CronJob name: its Jobs are named
// <name>-<11 characters of scheduled time> and must fit a DNS label.
const cronJobNameMax = validation.DNS1035LabelMaxLength - 11

// validateCronJob checks a new CronJob as upstream's ValidateCronJobCreate.
func validateCronJob(cj *batchv1.CronJob) field.ErrorList {
	errs := validateMeta(&cj.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	errs = append(errs, validateCronJobSpec(&cj.Spec, nil, specPath)...)
	if len(cj.Name) > cronJobNameMax {
		errs = append(errs, field.Invalid(metadataPath.Child("name"), cj.Name, fmt.Sprintf("must be no more than %d characters", cronJobNameMax)))
	}
	return errs
}

// validateCronJobUpdate checks a changed CronJob as upstream's
// ValidateCronJobUpdate: the name length is not checked again (old
// CronJobs with longer names stay editable), a TZ in the schedule is kept
// if it was there, and the time zone is checked only when it changes.
func validateCronJobUpdate(cj, old *batchv1.CronJob) field.ErrorList {
	errs := validateMetaUpdate(&cj.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateCronJobSpec(&cj.Spec, &old.Spec, specPath)...)
}

func validateCronJobSpec(spec, old *batchv1.CronJobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Schedule == "" {
		errs = append(errs, field.Required(path.Child("schedule"), ""))
	} else {
		tzAllowed := old != nil && strings.Contains(old.Schedule, "TZ")
		errs = append(errs, validateSchedule(spec.Schedule, tzAllowed, spec.TimeZone, path.Child("schedule"))...)
	}
	if spec.StartingDeadlineSeconds != nil {
		errs = append(errs, validateNonnegative(*spec.StartingDeadlineSeconds, path.Child("startingDeadlineSeconds"))...)
	}
	if old == nil || !equalStringPtr(old.TimeZone, spec.TimeZone) {
		errs = append(errs, validateTimeZone(spec.TimeZone, path.Child("timeZone"))...)
	}
	switch p := spec.ConcurrencyPolicy; p {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		errs = append(errs, field.Required(path.Child("concurrencyPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(path.Child("concurrencyPolicy"), p,
			[]batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}))
	}
	errs = append(errs, validateJobTemplateSpec(&spec.JobTemplate, path.Child("jobTemplate"))...)
	if l := spec.SuccessfulJobsHistoryLimit; l != nil {
		errs = append(errs, validateNonnegative(int64(*l), path.Child("successfulJobsHistoryLimit"))...)
	}
	if l := spec.FailedJobsHistoryLimit; l != nil {
		errs = append(errs, validateNonnegative(int64(*l), path.Child("failedJobsHistoryLimit"))...)
	}
	return errs
}

// validateSchedule parses the schedule with the parser the controller uses
// and refuses a time zone in it (CRON_TZ= or TZ=) unless it was there
// before, and then never together with spec.timeZone.
func validateSchedule(schedule string, tzAllowed bool, timeZone *string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := cron.ParseStandard(schedule); err != nil {
		errs = append(errs, field.Invalid(path, schedule, err.Error()))
	}
	switch {
	case tzAllowed && strings.Contains(schedule, "TZ") && timeZone != nil:
		errs = append(errs, field.Invalid(path, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
	case !tzAllowed && strings.Contains(schedule, "TZ"):
		errs = append(errs, field.Invalid(path, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	}
	return errs
}

// timeZonePart is one part of an IANA zone name: ASCII letters, '.', '-'
// and '_', up to 14 characters (digits and '+' for legacy names).
var timeZonePart = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

// validateTimeZone requires a zone the IANA database names, not Local.
func validateTimeZone(tz *string, path *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(path, tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !timeZonePart.MatchString(part) {
			return field.ErrorList{field.Invalid(path, tz, fmt.Sprintf("unknown time zone %s", *tz))}
		}
	}
	var errs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		errs = append(errs, field.Invalid(path, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		errs = append(errs, field.Invalid(path, tz, err.Error()))
	}
	return errs
}

// validateJobTemplateSpec checks a CronJob's job template as upstream's
// ValidateJobTemplateSpec: the Job spec's counts, completion mode, pod
// template and restart policy; the selector is generated for each Job, so
// the template may not set one.
func validateJobTemplateSpec(t *batchv1.JobTemplateSpec, path *field.Path) field.ErrorList {
	spec, sp := &t.Spec, path.Child("spec")
	var errs field.ErrorList
	for _, f := range []struct {
		v    *int32
		name string
	}{{spec.Parallelism, "parallelism"}, {spec.Completions, "completions"}, {spec.BackoffLimit, "backoffLimit"},
		{spec.TTLSecondsAfterFinished, "ttlSecondsAfterFinished"}, {spec.BackoffLimitPerIndex, "backoffLimitPerIndex"},
		{spec.MaxFailedIndexes, "maxFailedIndexes"}} {
		if f.v != nil {
			errs = append(errs, validateNonnegative(int64(*f.v), sp.Child(f.name))...)
		}
	}
	if spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, validateNonnegative(*spec.ActiveDeadlineSeconds, sp.Child("activeDeadlineSeconds"))...)
	}
	if m := spec.CompletionMode; m != nil {
		switch *m {
		case batchv1.NonIndexedCompletion:
		case batchv1.IndexedCompletion:
			if spec.Completions == nil {
				errs = append(errs, field.Required(sp.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
			}
		default:
			errs = append(errs, field.NotSupported(sp.Child("completionMode"), m, []batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
		}
	}
	tp := sp.Child("template")
	errs = append(errs, validatePodTemplateSpec(&spec.Template, tp)...)
	switch rp := spec.Template.Spec.RestartPolicy; {
	case rp == corev1.RestartPolicyAlways || rp == "":
		errs = append(errs, field.Required(tp.Child("spec", "restartPolicy"), fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)))
	case rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever:
		errs = append(errs, field.NotSupported(tp.Child("spec", "restartPolicy"), rp, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	case spec.PodFailurePolicy != nil && rp != corev1.RestartPolicyNever:
		errs = append(errs, field.Invalid(tp.Child("spec", "restartPolicy"), rp, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}
	if spec.Selector != nil {
		errs = append(errs, field.Invalid(sp.Child("selector"), spec.Selector, "`selector` will be auto-generated"))
	}
	if spec.ManualSelector != nil && *spec.ManualSelector {
		errs = append(errs, field.NotSupported(sp.Child("manualSelector"), spec.ManualSelector, []string{"nil", "false"}))
	}
	return errs
}

func equalStringPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

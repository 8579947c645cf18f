package printers

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Printer for batch/v1 Jobs, with upstream's columns: NAME STATUS
// COMPLETIONS DURATION AGE, and with -o wide CONTAINERS IMAGES SELECTOR.

func jobColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Status", "string", "Status of the job."),
		column("Completions", "string", "The completion status of the job."),
		column("Duration", "string", "Time required to complete the job."),
		ageColumn(),
		wideColumn("Containers", "string", containersDoc),
		wideColumn("Images", "string", imagesDoc),
		wideColumn("Selector", "string", batchv1.JobSpec{}.SwaggerDoc()["selector"]),
	}
}

func jobCells(j *batchv1.Job, now time.Time) []interface{} {
	names, images := containerCells(j.Spec.Template.Spec.Containers)
	return []interface{}{
		j.Name,
		jobStatus(j),
		jobCompletions(j),
		jobDuration(j, now),
		age(j.CreationTimestamp, now),
		names,
		images,
		metav1.FormatLabelSelector(j.Spec.Selector),
	}
}

// jobCompletions is "succeeded/completions"; a Job without completions
// needs one success ("n/1"), of any of its parallel pods ("n/1 of p").
func jobCompletions(j *batchv1.Job) string {
	if j.Spec.Completions != nil {
		return fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	}
	if j.Spec.Parallelism != nil && *j.Spec.Parallelism > 1 {
		return fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, *j.Spec.Parallelism)
	}
	return fmt.Sprintf("%d/1", j.Status.Succeeded)
}

// jobDuration is how long the Job ran: until it completed, or until now;
// empty before it started.
func jobDuration(j *batchv1.Job, now time.Time) string {
	switch {
	case j.Status.StartTime == nil:
		return ""
	case j.Status.CompletionTime == nil:
		return duration.HumanDuration(now.Sub(j.Status.StartTime.Time))
	}
	return duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
}

// jobStatus names the Job's state, terminal conditions first, as upstream.
func jobStatus(j *batchv1.Job) string {
	has := func(t batchv1.JobConditionType) bool {
		for _, c := range j.Status.Conditions {
			if c.Type == t && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	}
	switch {
	case has(batchv1.JobComplete):
		return "Complete"
	case has(batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case has(batchv1.JobSuspended):
		return "Suspended"
	case has(batchv1.JobFailureTarget):
		return "FailureTarget"
	case has(batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}

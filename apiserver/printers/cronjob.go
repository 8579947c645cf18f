package printers

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Printer for batch/v1 CronJobs, with upstream's columns.

func cronJobColumns() []metav1.TableColumnDefinition {
	spec, status := batchv1.CronJobSpec{}.SwaggerDoc(), batchv1.CronJobStatus{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Schedule", "string", spec["schedule"]),
		column("Timezone", "string", spec["timeZone"]),
		column("Suspend", "boolean", spec["suspend"]),
		column("Active", "integer", status["active"]),
		column("Last Schedule", "string", status["lastScheduleTime"]),
		ageColumn(),
		wideColumn("Containers", "string", "Names of each container in the template."),
		wideColumn("Images", "string", "Images referenced by each container in the template."),
		wideColumn("Selector", "string", batchv1.JobSpec{}.SwaggerDoc()["selector"]),
	}
}

func cronJobCells(cj *batchv1.CronJob, now time.Time) []interface{} {
	last := "<none>"
	if t := cj.Status.LastScheduleTime; t != nil {
		last = age(*t, now)
	}
	tz := "<none>"
	if cj.Spec.TimeZone != nil {
		tz = *cj.Spec.TimeZone
	}
	suspend := "<unset>"
	if s := cj.Spec.Suspend; s != nil {
		suspend = "False"
		if *s {
			suspend = "True"
		}
	}
	names, images := containerCells(cj.Spec.JobTemplate.Spec.Template.Spec.Containers)
	return []interface{}{
		cj.Name,
		cj.Spec.Schedule,
		tz,
		suspend,
		int64(len(cj.Status.Active)),
		last,
		age(cj.CreationTimestamp, now),
		names,
		images,
		metav1.FormatLabelSelector(cj.Spec.JobTemplate.Spec.Selector),
	}
}

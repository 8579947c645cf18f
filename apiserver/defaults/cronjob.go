package defaults

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// defaultCronJob fills a CronJob's defaults as upstream: concurrencyPolicy
// Allow, suspend false, history limits 3 successful and 1 failed, and the
// pod defaults in the job template. The template's Job fields (completions,
// backoffLimit, ...) are left for the Jobs made from it.
func defaultCronJob(cj *batchv1.CronJob) {
	spec := &cj.Spec
	if spec.ConcurrencyPolicy == "" {
		spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if spec.Suspend == nil {
		spec.Suspend = new(false)
	}
	if spec.SuccessfulJobsHistoryLimit == nil {
		spec.SuccessfulJobsHistoryLimit = new(int32(3))
	}
	if spec.FailedJobsHistoryLimit == nil {
		spec.FailedJobsHistoryLimit = new(int32(1))
	}
	if pfp := spec.JobTemplate.Spec.PodFailurePolicy; pfp != nil {
		for i := range pfp.Rules {
			for j := range pfp.Rules[i].OnPodConditions {
				if pfp.Rules[i].OnPodConditions[j].Status == "" {
					pfp.Rules[i].OnPodConditions[j].Status = corev1.ConditionTrue
				}
			}
		}
	}
	defaultPodTemplateSpec(&spec.JobTemplate.Spec.Template)
}

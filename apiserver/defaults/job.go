package defaults

import (
	"maps"
	"math"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The labels upstream put on a Job's pods before the batch.kubernetes.io
// prefixed ones, still set for selectors written against them.
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)

// defaultJob fills a batch/v1 Job's defaults as upstream: one completion at
// parallelism one when neither is given, parallelism one, a backoffLimit of
// 6 (the maximum with a per-index limit), NonIndexed completion, not
// suspended, pod conditions in failure rules matching True, the pod
// replacement policy, and the Job labelled like its pods when it has no
// labels of its own.
func defaultJob(j *batchv1.Job) {
	if len(j.Labels) == 0 && len(j.Spec.Template.Labels) > 0 {
		j.Labels = maps.Clone(j.Spec.Template.Labels)
	}
	DefaultJobSpec(&j.Spec)
}

// DefaultJobSpec defaults a Job's spec (also a CronJob's job template).
func DefaultJobSpec(s *batchv1.JobSpec) {
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions = new(int32(1))
	}
	if s.Parallelism == nil {
		s.Parallelism = new(int32(1))
	}
	if s.BackoffLimit == nil {
		if s.BackoffLimitPerIndex != nil {
			s.BackoffLimit = new(int32(math.MaxInt32))
		} else {
			s.BackoffLimit = new(int32(6))
		}
	}
	if s.CompletionMode == nil {
		s.CompletionMode = new(batchv1.NonIndexedCompletion)
	}
	if s.Suspend == nil {
		s.Suspend = new(false)
	}
	if p := s.PodFailurePolicy; p != nil {
		for i := range p.Rules {
			for k := range p.Rules[i].OnPodConditions {
				if p.Rules[i].OnPodConditions[k].Status == "" {
					p.Rules[i].OnPodConditions[k].Status = corev1.ConditionTrue
				}
			}
		}
	}
	if s.PodReplacementPolicy == nil {
		if s.PodFailurePolicy != nil {
			s.PodReplacementPolicy = new(batchv1.Failed)
		} else {
			s.PodReplacementPolicy = new(batchv1.TerminatingOrFailed)
		}
	}
	defaultPodTemplateSpec(&s.Template)
}

// GenerateJobSelector is what the API server does to a Job it creates
// without spec.manualSelector: the pod template is labelled with the Job's
// name and UID (batch.kubernetes.io/job-name and controller-uid, and the
// legacy job-name and controller-uid), and the selector matches the UID.
// Labels the client set are kept (validation rejects a mismatch). A Job
// whose labels were copied from its template gets the new labels too. It
// needs the UID, so it runs once the server assigned one.
func GenerateJobSelector(j *batchv1.Job) {
	if j.Spec.ManualSelector != nil && *j.Spec.ManualSelector {
		return
	}
	relabel := len(j.Labels) == 0 || maps.Equal(j.Labels, j.Spec.Template.Labels)
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	for k, v := range map[string]string{
		legacyJobNameLabel: j.Name, batchv1.JobNameLabel: j.Name,
		legacyControllerUIDLabel: string(j.UID), batchv1.ControllerUidLabel: string(j.UID),
	} {
		if _, ok := j.Spec.Template.Labels[k]; !ok {
			j.Spec.Template.Labels[k] = v
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{}
	}
	if j.Spec.Selector.MatchLabels == nil {
		j.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, ok := j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !ok {
		j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(j.UID)
	}
	if relabel {
		j.Labels = maps.Clone(j.Spec.Template.Labels)
	}
}

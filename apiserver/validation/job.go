package validation

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxParallelismForIndexedJob and maxCompletionsForIndexedJob bound an
// Indexed Job without a per-index backoff limit, as upstream: the completed
// indexes must fit the status.
const (
	maxParallelismForIndexedJob = 100_000
	maxCompletionsForIndexedJob = 100_000
	maxPodFailurePolicyRules    = 20
	maxExitCodeValues           = 255
)

// validateJob validates a new batch/v1 Job.
func validateJob(j *batchv1.Job) field.ErrorList {
	errs := validateMeta(&j.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	if j.Spec.ManualSelector == nil || !*j.Spec.ManualSelector {
		errs = append(errs, validateGeneratedJobSelector(j)...)
	}
	return append(errs, ValidateJobSpec(&j.Spec, specPath)...)
}

// validateJobUpdate adds what may not change: the selector, the pod template
// (unless the Job is suspended, when only scheduling directives may), the
// completion mode, the pod failure policy and the per-index limits.
// Completions may change only for an Indexed Job, together with parallelism.
func validateJobUpdate(j, old *batchv1.Job) field.ErrorList {
	errs := validateMetaUpdate(&j.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, ValidateJobSpec(&j.Spec, specPath)...)
	immutable := func(n, o any, name string) {
		errs = append(errs, apivalidation.ValidateImmutableField(n, o, specPath.Child(name))...)
	}
	immutable(j.Spec.Selector, old.Spec.Selector, "selector")
	immutable(j.Spec.CompletionMode, old.Spec.CompletionMode, "completionMode")
	immutable(j.Spec.PodFailurePolicy, old.Spec.PodFailurePolicy, "podFailurePolicy")
	immutable(j.Spec.BackoffLimitPerIndex, old.Spec.BackoffLimitPerIndex, "backoffLimitPerIndex")
	immutable(j.Spec.ManagedBy, old.Spec.ManagedBy, "managedBy")
	if !apiequality.Semantic.DeepEqual(j.Spec.Completions, old.Spec.Completions) {
		indexed := j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion
		if !indexed || j.Spec.Completions == nil || j.Spec.Parallelism == nil || *j.Spec.Completions != *j.Spec.Parallelism {
			immutable(j.Spec.Completions, old.Spec.Completions, "completions")
		}
	}
	if !apiequality.Semantic.DeepEqual(j.Spec.Template, old.Spec.Template) {
		suspended := old.Spec.Suspend != nil && *old.Spec.Suspend && old.Status.StartTime == nil
		if !suspended || !onlySchedulingChanged(&j.Spec.Template, &old.Spec.Template) {
			immutable(j.Spec.Template, old.Spec.Template, "template")
		}
	}
	return errs
}

// onlySchedulingChanged reports whether two templates differ only in the
// directives a suspended Job may change: node affinity, node selector,
// tolerations, labels, annotations and scheduling gates.
func onlySchedulingChanged(n, o *corev1.PodTemplateSpec) bool {
	a, b := n.DeepCopy(), o.DeepCopy()
	for _, t := range []*corev1.PodTemplateSpec{a, b} {
		t.Labels, t.Annotations = nil, nil
		t.Spec.NodeSelector, t.Spec.Tolerations, t.Spec.SchedulingGates = nil, nil, nil
		if t.Spec.Affinity != nil {
			t.Spec.Affinity.NodeAffinity = nil
		}
	}
	return apiequality.Semantic.DeepEqual(a, b)
}

// validateGeneratedJobSelector checks, for a Job without manualSelector,
// that the selector and the template carry the labels the API server
// generated from its UID.
func validateGeneratedJobSelector(j *batchv1.Job) field.ErrorList {
	if j.UID == "" || j.Spec.Selector == nil {
		return nil // validated elsewhere (required selector)
	}
	var errs field.ErrorList
	uid := string(j.UID)
	if got := j.Spec.Template.Labels[batchv1.ControllerUidLabel]; got != uid {
		errs = append(errs, field.Invalid(specPath.Child("template", "metadata", "labels"), j.Spec.Template.Labels,
			fmt.Sprintf("`selector` not auto-generated: the template must carry %s=%s", batchv1.ControllerUidLabel, uid)))
	}
	if got := j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; got != uid {
		errs = append(errs, field.Invalid(specPath.Child("selector"), j.Spec.Selector,
			fmt.Sprintf("`selector` not auto-generated: it must match %s=%s", batchv1.ControllerUidLabel, uid)))
	}
	return errs
}

// ValidateJobSpec validates the spec of a Job (also a CronJob's job
// template) under path.
func ValidateJobSpec(spec *batchv1.JobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	nonNegative := func(v *int32, name string) {
		if v != nil {
			errs = append(errs, validateNonnegative(int64(*v), path.Child(name))...)
		}
	}
	nonNegative(spec.Parallelism, "parallelism")
	nonNegative(spec.Completions, "completions")
	nonNegative(spec.BackoffLimit, "backoffLimit")
	nonNegative(spec.BackoffLimitPerIndex, "backoffLimitPerIndex")
	nonNegative(spec.MaxFailedIndexes, "maxFailedIndexes")
	nonNegative(spec.TTLSecondsAfterFinished, "ttlSecondsAfterFinished")
	if spec.ActiveDeadlineSeconds != nil && *spec.ActiveDeadlineSeconds <= 0 {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *spec.ActiveDeadlineSeconds, "must be greater than 0"))
	}
	indexed := false
	if spec.CompletionMode != nil {
		switch *spec.CompletionMode {
		case batchv1.NonIndexedCompletion:
		case batchv1.IndexedCompletion:
			indexed = true
		default:
			errs = append(errs, field.NotSupported(path.Child("completionMode"), *spec.CompletionMode,
				[]batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
		}
	}
	if indexed {
		if spec.Completions == nil {
			errs = append(errs, field.Required(path.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
		} else if spec.BackoffLimitPerIndex == nil && *spec.Completions > maxCompletionsForIndexedJob {
			errs = append(errs, field.Invalid(path.Child("completions"), *spec.Completions, fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxCompletionsForIndexedJob, batchv1.IndexedCompletion)))
		}
		if spec.Parallelism != nil && *spec.Parallelism > maxParallelismForIndexedJob {
			errs = append(errs, field.Invalid(path.Child("parallelism"), *spec.Parallelism, fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxParallelismForIndexedJob, batchv1.IndexedCompletion)))
		}
	} else {
		if spec.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Required(path.Child("completionMode"), fmt.Sprintf("when backoffLimitPerIndex is specified, completionMode must be %s", batchv1.IndexedCompletion)))
		}
	}
	if spec.MaxFailedIndexes != nil && spec.BackoffLimitPerIndex == nil {
		errs = append(errs, field.Required(path.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
	}
	errs = append(errs, validateJobSelector(spec, path)...)
	tmpl := path.Child("template")
	errs = append(errs, validatePodTemplateSpec(&spec.Template, tmpl)...)
	switch spec.Template.Spec.RestartPolicy {
	case corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
	default:
		errs = append(errs, field.NotSupported(tmpl.Child("spec", "restartPolicy"), spec.Template.Spec.RestartPolicy,
			[]corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	}
	if spec.PodFailurePolicy != nil {
		errs = append(errs, validatePodFailurePolicy(spec, path.Child("podFailurePolicy"))...)
	}
	if p := spec.PodReplacementPolicy; p != nil {
		switch {
		case *p != batchv1.Failed && *p != batchv1.TerminatingOrFailed:
			errs = append(errs, field.NotSupported(path.Child("podReplacementPolicy"), *p, []batchv1.PodReplacementPolicy{batchv1.Failed, batchv1.TerminatingOrFailed}))
		case spec.PodFailurePolicy != nil && *p != batchv1.Failed:
			errs = append(errs, field.NotSupported(path.Child("podReplacementPolicy"), *p, []batchv1.PodReplacementPolicy{batchv1.Failed}))
		}
	}
	return errs
}

func validateJobSelector(spec *batchv1.JobSpec, path *field.Path) field.ErrorList {
	selPath := path.Child("selector")
	if spec.Selector == nil {
		return field.ErrorList{field.Required(selPath, "")}
	}
	errs := metav1validation.ValidateLabelSelector(spec.Selector, labelSelectorValidation, selPath)
	sel, err := metav1.LabelSelectorAsSelector(spec.Selector)
	switch {
	case err != nil:
		errs = append(errs, field.Invalid(selPath, spec.Selector, "invalid label selector"))
	case sel.Empty():
		errs = append(errs, field.Invalid(selPath, spec.Selector, "empty selector is invalid for job"))
	case !sel.Matches(labels.Set(spec.Template.Labels)):
		errs = append(errs, field.Invalid(path.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	return errs
}

// validatePodFailurePolicy checks the rules: at most 20, a known action
// (FailIndex only with backoffLimitPerIndex), exactly one of onExitCodes
// and onPodConditions, exit-code sets of distinct values without 0 for In,
// and pods that are never restarted in place.
func validatePodFailurePolicy(spec *batchv1.JobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	rulesPath := path.Child("rules")
	if spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		errs = append(errs, field.Invalid(specPath.Child("template", "spec", "restartPolicy"), spec.Template.Spec.RestartPolicy,
			"only \"Never\" is supported when podFailurePolicy is specified"))
	}
	rules := spec.PodFailurePolicy.Rules
	if len(rules) > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(rulesPath, len(rules), maxPodFailurePolicyRules))
	}
	actions := []batchv1.PodFailurePolicyAction{batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex,
		batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore}
	for i, r := range rules {
		rp := rulesPath.Index(i)
		switch r.Action {
		case batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore:
		case batchv1.PodFailurePolicyActionFailIndex:
			if spec.BackoffLimitPerIndex == nil {
				errs = append(errs, field.Invalid(rp.Child("action"), r.Action, "requires the backoffLimitPerIndex to be set"))
			}
		case "":
			errs = append(errs, field.Required(rp.Child("action"), ""))
		default:
			errs = append(errs, field.NotSupported(rp.Child("action"), r.Action, actions))
		}
		switch {
		case r.OnExitCodes != nil && len(r.OnPodConditions) > 0:
			errs = append(errs, field.Invalid(rp, r, "specifying both OnExitCodes and OnPodConditions is not supported"))
		case r.OnExitCodes == nil && len(r.OnPodConditions) == 0:
			errs = append(errs, field.Invalid(rp, r, "specifying one of OnExitCodes and OnPodConditions is required"))
		case r.OnExitCodes != nil:
			errs = append(errs, validateOnExitCodes(r.OnExitCodes, rp.Child("onExitCodes"))...)
		default:
			for k, c := range r.OnPodConditions {
				cp := rp.Child("onPodConditions").Index(k)
				errs = append(errs, validateQualifiedName(string(c.Type), cp.Child("type"))...)
				if c.Status != corev1.ConditionTrue && c.Status != corev1.ConditionFalse && c.Status != corev1.ConditionUnknown {
					errs = append(errs, field.NotSupported(cp.Child("status"), c.Status,
						[]corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown}))
				}
			}
		}
	}
	return errs
}

func validateOnExitCodes(r *batchv1.PodFailurePolicyOnExitCodesRequirement, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch r.Operator {
	case batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn:
	case "":
		errs = append(errs, field.Required(path.Child("operator"), ""))
	default:
		errs = append(errs, field.NotSupported(path.Child("operator"), r.Operator,
			[]batchv1.PodFailurePolicyOnExitCodesOperator{batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn}))
	}
	if r.ContainerName != nil {
		errs = append(errs, validateDNSLabel(*r.ContainerName, path.Child("containerName"))...)
	}
	vp := path.Child("values")
	switch {
	case len(r.Values) == 0:
		errs = append(errs, field.Invalid(vp, r.Values, "at least one value is required"))
	case len(r.Values) > maxExitCodeValues:
		errs = append(errs, field.TooMany(vp, len(r.Values), maxExitCodeValues))
	}
	for i, v := range r.Values {
		if i > 0 && v <= r.Values[i-1] {
			errs = append(errs, field.Invalid(vp.Index(i), v, "must be ordered in increasing order and without duplicates"))
		}
		if v == 0 && r.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn {
			errs = append(errs, field.Invalid(vp.Index(i), v, "must not be 0 for the In operator"))
		}
	}
	return errs
}

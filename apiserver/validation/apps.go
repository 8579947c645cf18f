package validation

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedDeploymentStrategies = []appsv1.DeploymentStrategyType{appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType}

func validateDeployment(d *appsv1.Deployment) field.ErrorList {
	errs := validateMeta(&d.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	return append(errs, validateDeploymentSpec(&d.Spec, specPath)...)
}

// validateDeploymentUpdate adds to the create checks that the selector of an
// apps/v1 Deployment never changes.
func validateDeploymentUpdate(d, old *appsv1.Deployment) field.ErrorList {
	errs := validateMetaUpdate(&d.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateDeployment(d)...)
	return append(errs, apivalidation.ValidateImmutableField(d.Spec.Selector, old.Spec.Selector, specPath.Child("selector"))...)
}

func validateDeploymentSpec(spec *appsv1.DeploymentSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Replicas != nil {
		errs = append(errs, validateNonnegative(int64(*spec.Replicas), path.Child("replicas"))...)
	}
	errs = append(errs, validateWorkloadSelector(spec.Selector, &spec.Template, path)...)
	errs = append(errs, validateNonnegative(int64(spec.MinReadySeconds), path.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, validateNonnegative(int64(*spec.RevisionHistoryLimit), path.Child("revisionHistoryLimit"))...)
	}
	if pds := spec.ProgressDeadlineSeconds; pds != nil {
		p := path.Child("progressDeadlineSeconds")
		errs = append(errs, validateNonnegative(int64(*pds), p)...)
		if *pds <= spec.MinReadySeconds {
			errs = append(errs, field.Invalid(p, *pds, "must be greater than minReadySeconds"))
		}
	}

	strategy := path.Child("strategy")
	switch spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if spec.Strategy.RollingUpdate != nil {
			errs = append(errs, field.Forbidden(strategy.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		if spec.Strategy.RollingUpdate == nil {
			errs = append(errs, field.Required(strategy.Child("rollingUpdate"), "this should be defaulted and never be nil"))
		} else {
			errs = append(errs, validateRollingUpdate(spec.Strategy.RollingUpdate, strategy.Child("rollingUpdate"))...)
		}
	default:
		errs = append(errs, field.NotSupported(strategy.Child("type"), spec.Strategy.Type, supportedDeploymentStrategies))
	}
	return errs
}

// validateRollingUpdate requires maxSurge and maxUnavailable to be counts or
// percentages, not both zero (the rollout could never progress), and
// maxUnavailable to be at most 100%.
func validateRollingUpdate(ru *appsv1.RollingUpdateDeployment, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	unavailable, surge := path.Child("maxUnavailable"), path.Child("maxSurge")
	if ru.MaxUnavailable != nil {
		errs = append(errs, validateIntOrPercent(*ru.MaxUnavailable, unavailable)...)
	}
	if ru.MaxSurge != nil {
		errs = append(errs, validateIntOrPercent(*ru.MaxSurge, surge)...)
	}
	if intOrPercentValue(ru.MaxUnavailable) == 0 && intOrPercentValue(ru.MaxSurge) == 0 {
		errs = append(errs, field.Invalid(unavailable, ru.MaxUnavailable, "may not be 0 when `maxSurge` is 0"))
	}
	if v, ok := percentValue(ru.MaxUnavailable); ok && v > 100 {
		errs = append(errs, field.Invalid(unavailable, ru.MaxUnavailable, "must not be greater than 100%"))
	}
	return errs
}

func validateIntOrPercent(v intstr.IntOrString, path *field.Path) field.ErrorList {
	if v.Type == intstr.String {
		return messages(path, v, validation.IsValidPercent(v.StrVal))
	}
	return validateNonnegative(int64(v.IntValue()), path)
}

// intOrPercentValue returns the number in v, with or without a percent
// sign; zero when nil or malformed.
func intOrPercentValue(v *intstr.IntOrString) int {
	if v == nil {
		return 0
	}
	if p, ok := percentValue(v); ok {
		return p
	}
	return v.IntValue()
}

func percentValue(v *intstr.IntOrString) (int, bool) {
	if v == nil || v.Type != intstr.String || !strings.HasSuffix(v.StrVal, "%") {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	return n, err == nil
}

func validateReplicaSet(rs *appsv1.ReplicaSet) field.ErrorList {
	errs := validateMeta(&rs.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	spec := &rs.Spec
	if spec.Replicas != nil {
		errs = append(errs, validateNonnegative(int64(*spec.Replicas), specPath.Child("replicas"))...)
	}
	errs = append(errs, validateNonnegative(int64(spec.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	return append(errs, validateWorkloadSelector(spec.Selector, &spec.Template, specPath)...)
}

// validateReplicaSetUpdate adds to the create checks that the selector of an
// apps/v1 ReplicaSet never changes.
func validateReplicaSetUpdate(rs, old *appsv1.ReplicaSet) field.ErrorList {
	errs := validateMetaUpdate(&rs.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateReplicaSet(rs)...)
	return append(errs, apivalidation.ValidateImmutableField(rs.Spec.Selector, old.Spec.Selector, specPath.Child("selector"))...)
}

// validateWorkloadSelector checks the selector of a Deployment or
// ReplicaSet and the template it must select: a non-empty selector matching
// the template labels, and pods that restart forever.
func validateWorkloadSelector(sel *metav1.LabelSelector, template *corev1.PodTemplateSpec, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	selPath, tmplPath := spec.Child("selector"), spec.Child("template")
	if sel == nil {
		errs = append(errs, field.Required(selPath, ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(sel, labelSelectorValidation, selPath)...)
		if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
			errs = append(errs, field.Invalid(selPath, sel, "empty selector is invalid for deployment"))
		}
	}
	if sel != nil {
		selector, err := metav1.LabelSelectorAsSelector(sel)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(selPath, sel, "invalid label selector"))
		case !selector.Empty() && !selector.Matches(labels.Set(template.Labels)):
			errs = append(errs, field.Invalid(tmplPath.Child("metadata", "labels"), template.Labels, "`selector` does not match template `labels`"))
		}
	}
	errs = append(errs, validatePodTemplateSpec(template, tmplPath)...)
	if rp := template.Spec.RestartPolicy; rp != "" && rp != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(tmplPath.Child("spec", "restartPolicy"), template.Spec.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if template.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(tmplPath.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicaSet is not Supported"))
	}
	return errs
}

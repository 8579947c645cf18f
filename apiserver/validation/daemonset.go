package validation

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedDaemonSetStrategies = []appsv1.DaemonSetUpdateStrategyType{appsv1.RollingUpdateDaemonSetStrategyType, appsv1.OnDeleteDaemonSetStrategyType}

// validateDaemonSet checks a DaemonSet as upstream's ValidateDaemonSet.
func validateDaemonSet(ds *appsv1.DaemonSet) field.ErrorList {
	errs := validateMeta(&ds.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	errs = append(errs, validateDaemonSetSpec(&ds.Spec, specPath)...)
	return append(errs, validateDaemonSetStatus(&ds.Status, field.NewPath("status"))...)
}

// validateDaemonSetUpdate adds to the create checks that the selector
// never changes.
func validateDaemonSetUpdate(ds, old *appsv1.DaemonSet) field.ErrorList {
	errs := validateMetaUpdate(&ds.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateDaemonSet(ds)...)
	return append(errs, apivalidation.ValidateImmutableField(ds.Spec.Selector, old.Spec.Selector, specPath.Child("selector"))...)
}

func validateDaemonSetSpec(spec *appsv1.DaemonSetSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	selPath, tmplPath := path.Child("selector"), path.Child("template")
	if spec.Selector == nil {
		errs = append(errs, field.Required(selPath, ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, labelSelectorValidation, selPath)...)
		if len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
			errs = append(errs, field.Invalid(selPath, spec.Selector, "empty selector is invalid for daemonset"))
		}
		if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !sel.Matches(labels.Set(spec.Template.Labels)) {
			errs = append(errs, field.Invalid(tmplPath.Child("metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
		}
	}
	errs = append(errs, validatePodTemplateSpec(&spec.Template, tmplPath)...)
	if rp := spec.Template.Spec.RestartPolicy; rp != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(tmplPath.Child("spec", "restartPolicy"), rp, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if ads := spec.Template.Spec.ActiveDeadlineSeconds; ads != nil {
		errs = append(errs, field.Invalid(tmplPath.Child("spec", "activeDeadlineSeconds"), *ads, "activeDeadlineSeconds in DaemonSet is not Supported"))
	}
	errs = append(errs, validateNonnegative(int64(spec.MinReadySeconds), path.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, validateNonnegative(int64(*spec.RevisionHistoryLimit), path.Child("revisionHistoryLimit"))...)
	}
	return append(errs, validateDaemonSetUpdateStrategy(&spec.UpdateStrategy, path.Child("updateStrategy"))...)
}

// validateDaemonSetUpdateStrategy requires a known type and, for
// RollingUpdate, exactly one of maxUnavailable and maxSurge non-zero, each
// a count or a percentage of at most 100%.
func validateDaemonSetUpdateStrategy(s *appsv1.DaemonSetUpdateStrategy, path *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
		return nil
	case appsv1.RollingUpdateDaemonSetStrategyType:
	default:
		return field.ErrorList{field.NotSupported(path, s.Type, supportedDaemonSetStrategies)}
	}
	ru := s.RollingUpdate
	if ru == nil {
		return field.ErrorList{field.Required(path.Child("rollingUpdate"), "")}
	}
	var errs field.ErrorList
	path = path.Child("rollingUpdate")
	unavailable, surge := path.Child("maxUnavailable"), path.Child("maxSurge")
	for _, f := range []struct {
		v    *intstr.IntOrString
		path *field.Path
	}{{ru.MaxUnavailable, unavailable}, {ru.MaxSurge, surge}} {
		if f.v == nil {
			continue
		}
		errs = append(errs, validateIntOrPercent(*f.v, f.path)...)
		if v, ok := percentValue(f.v); ok && v > 100 {
			errs = append(errs, field.Invalid(f.path, f.v, "must not be greater than 100%"))
		}
	}
	hasUnavailable, hasSurge := intOrPercentValue(ru.MaxUnavailable) != 0, intOrPercentValue(ru.MaxSurge) != 0
	switch {
	case hasUnavailable && hasSurge:
		errs = append(errs, field.Invalid(surge, ru.MaxSurge, "may not be set when maxUnavailable is non-zero"))
	case !hasUnavailable && !hasSurge:
		errs = append(errs, field.Required(unavailable, "cannot be 0 when maxSurge is 0"))
	}
	return errs
}

// validateDaemonSetStatus requires the counts to be non-negative.
func validateDaemonSetStatus(st *appsv1.DaemonSetStatus, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"currentNumberScheduled", int64(st.CurrentNumberScheduled)},
		{"numberMisscheduled", int64(st.NumberMisscheduled)},
		{"desiredNumberScheduled", int64(st.DesiredNumberScheduled)},
		{"numberReady", int64(st.NumberReady)},
		{"observedGeneration", st.ObservedGeneration},
		{"updatedNumberScheduled", int64(st.UpdatedNumberScheduled)},
		{"numberAvailable", int64(st.NumberAvailable)},
		{"numberUnavailable", int64(st.NumberUnavailable)},
	} {
		errs = append(errs, validateNonnegative(f.v, path.Child(f.name))...)
	}
	if st.CollisionCount != nil {
		errs = append(errs, validateNonnegative(int64(*st.CollisionCount), path.Child("collisionCount"))...)
	}
	return errs
}

package validation

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	supportedPodManagementPolicies = []appsv1.PodManagementPolicyType{appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement}
	supportedStatefulSetStrategies = []appsv1.StatefulSetUpdateStrategyType{appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType}
	supportedRetentionPolicies     = []appsv1.PersistentVolumeClaimRetentionPolicyType{appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
)

// validateStatefulSet checks a StatefulSet as upstream's ValidateStatefulSet.
func validateStatefulSet(s *appsv1.StatefulSet) field.ErrorList {
	errs := validateMeta(&s.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	return append(errs, validateStatefulSetSpec(&s.Spec, specPath)...)
}

// validateStatefulSetUpdate adds to the create checks that only replicas,
// ordinals, template, updateStrategy, revisionHistoryLimit,
// persistentVolumeClaimRetentionPolicy and minReadySeconds change.
func validateStatefulSetUpdate(s, old *appsv1.StatefulSet) field.ErrorList {
	errs := validateMetaUpdate(&s.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateStatefulSet(s)...)
	mutable := s.Spec.DeepCopy()
	mutable.Replicas = old.Spec.Replicas
	mutable.Ordinals = old.Spec.Ordinals
	mutable.Template = old.Spec.Template
	mutable.UpdateStrategy = old.Spec.UpdateStrategy
	mutable.RevisionHistoryLimit = old.Spec.RevisionHistoryLimit
	mutable.PersistentVolumeClaimRetentionPolicy = old.Spec.PersistentVolumeClaimRetentionPolicy
	mutable.MinReadySeconds = old.Spec.MinReadySeconds
	// Status-like fields of the claim templates are not the user's to set.
	for i := range mutable.VolumeClaimTemplates {
		if i < len(old.Spec.VolumeClaimTemplates) {
			mutable.VolumeClaimTemplates[i].Status = old.Spec.VolumeClaimTemplates[i].Status
		}
	}
	if !apiequality.Semantic.DeepEqual(*mutable, old.Spec) {
		errs = append(errs, field.Forbidden(specPath, "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"))
	}
	return errs
}

func validateStatefulSetSpec(spec *appsv1.StatefulSetSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch spec.PodManagementPolicy {
	case "":
		errs = append(errs, field.Required(path.Child("podManagementPolicy"), ""))
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.NotSupported(path.Child("podManagementPolicy"), spec.PodManagementPolicy, supportedPodManagementPolicies))
	}
	errs = append(errs, validateStatefulSetUpdateStrategy(&spec.UpdateStrategy, path.Child("updateStrategy"))...)
	errs = append(errs, validateRetentionPolicy(spec.PersistentVolumeClaimRetentionPolicy, path.Child("persistentVolumeClaimRetentionPolicy"))...)
	if spec.Replicas != nil {
		errs = append(errs, validateNonnegative(int64(*spec.Replicas), path.Child("replicas"))...)
	}
	if spec.Ordinals != nil {
		errs = append(errs, validateNonnegative(int64(spec.Ordinals.Start), path.Child("ordinals", "start"))...)
	}
	errs = append(errs, validateNonnegative(int64(spec.MinReadySeconds), path.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, validateNonnegative(int64(*spec.RevisionHistoryLimit), path.Child("revisionHistoryLimit"))...)
	}
	if spec.ServiceName != "" {
		errs = append(errs, messages(path.Child("serviceName"), spec.ServiceName, apivalidation.NameIsDNS1035Label(spec.ServiceName, false))...)
	}

	selPath, tmplPath := path.Child("selector"), path.Child("template")
	if spec.Selector == nil {
		errs = append(errs, field.Required(selPath, ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, labelSelectorValidation, selPath)...)
		if len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
			errs = append(errs, field.Invalid(selPath, spec.Selector, "empty selector is invalid for statefulset"))
		}
		if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err != nil {
			errs = append(errs, field.Invalid(selPath, spec.Selector, "invalid label selector"))
		} else if !sel.Matches(labels.Set(spec.Template.Labels)) {
			errs = append(errs, field.Invalid(tmplPath.Child("metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
		}
	}
	errs = append(errs, validatePodTemplateSpec(withClaimVolumes(spec), tmplPath)...)
	if rp := spec.Template.Spec.RestartPolicy; rp != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(tmplPath.Child("spec", "restartPolicy"), rp, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if spec.Template.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(tmplPath.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in StatefulSet is not Supported"))
	}
	claims := path.Child("volumeClaimTemplates")
	for i := range spec.VolumeClaimTemplates {
		c := &spec.VolumeClaimTemplates[i]
		// The name is also the name of the pods' volume: a DNS label.
		errs = append(errs, validateDNSLabel(c.Name, claims.Index(i).Child("metadata", "name"))...)
	}
	return errs
}

// validateStatefulSetUpdateStrategy requires a known type; rollingUpdate
// only with RollingUpdate, its partition non-negative and maxUnavailable a
// count of at least 1 or a percentage of 1-100%.
func validateStatefulSetUpdateStrategy(s *appsv1.StatefulSetUpdateStrategy, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch s.Type {
	case "":
		return field.ErrorList{field.Required(path, "")}
	case appsv1.OnDeleteStatefulSetStrategyType:
		if s.RollingUpdate != nil {
			errs = append(errs, field.Invalid(path.Child("rollingUpdate"), s.RollingUpdate, "only allowed for updateStrategy 'RollingUpdate'"))
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		ru := s.RollingUpdate
		if ru == nil {
			break
		}
		ruPath := path.Child("rollingUpdate")
		if ru.Partition != nil {
			errs = append(errs, validateNonnegative(int64(*ru.Partition), ruPath.Child("partition"))...)
		}
		if ru.MaxUnavailable != nil {
			mu := ruPath.Child("maxUnavailable")
			errs = append(errs, validateIntOrPercent(*ru.MaxUnavailable, mu)...)
			if intOrPercentValue(ru.MaxUnavailable) == 0 {
				errs = append(errs, field.Invalid(mu, ru.MaxUnavailable, "must be greater than 0"))
			}
			if v, ok := percentValue(ru.MaxUnavailable); ok && v > 100 {
				errs = append(errs, field.Invalid(mu, ru.MaxUnavailable, "must not be greater than 100%"))
			}
		}
	default:
		errs = append(errs, field.NotSupported(path, s.Type, supportedStatefulSetStrategies))
	}
	return errs
}

func validateRetentionPolicy(p *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy, path *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	for _, f := range []struct {
		v    appsv1.PersistentVolumeClaimRetentionPolicyType
		name string
	}{{p.WhenDeleted, "whenDeleted"}, {p.WhenScaled, "whenScaled"}} {
		switch f.v {
		case appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType:
		default:
			errs = append(errs, field.NotSupported(path.Child(f.name), f.v, supportedRetentionPolicies))
		}
	}
	return errs
}

// withClaimVolumes is the pod template as the set's pods get it: each claim
// template is a volume (mounted by the containers by its name).
func withClaimVolumes(spec *appsv1.StatefulSetSpec) *corev1.PodTemplateSpec {
	if len(spec.VolumeClaimTemplates) == 0 {
		return &spec.Template
	}
	t := spec.Template.DeepCopy()
	have := make(map[string]bool, len(t.Spec.Volumes))
	for _, v := range t.Spec.Volumes {
		have[v.Name] = true
	}
	for _, c := range spec.VolumeClaimTemplates {
		if have[c.Name] || len(validation.IsDNS1123Label(c.Name)) > 0 {
			// An invalid name is reported on the claim template.
			continue
		}
		t.Spec.Volumes = append(t.Spec.Volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name},
		}})
	}
	return t
}

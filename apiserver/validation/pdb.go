package validation

import (
	policyv1 "k8s.io/api/policy/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedUnhealthyPodEvictionPolicies = []policyv1.UnhealthyPodEvictionPolicyType{policyv1.AlwaysAllow, policyv1.IfHealthyBudget}

// validatePodDisruptionBudget checks a budget as upstream: at most one of
// minAvailable and maxUnavailable, each a count or a percentage of at most
// 100%, a valid selector and a known unhealthy pod eviction policy.
func validatePodDisruptionBudget(pdb *policyv1.PodDisruptionBudget) field.ErrorList {
	errs := validateMeta(&pdb.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	spec := &pdb.Spec
	if spec.MinAvailable != nil && spec.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(specPath, spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	if spec.MinAvailable != nil {
		errs = append(errs, validateBudgetValue(*spec.MinAvailable, specPath.Child("minAvailable"))...)
	}
	if spec.MaxUnavailable != nil {
		errs = append(errs, validateBudgetValue(*spec.MaxUnavailable, specPath.Child("maxUnavailable"))...)
	}
	errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, labelSelectorValidation, specPath.Child("selector"))...)
	if p := spec.UnhealthyPodEvictionPolicy; p != nil {
		switch *p {
		case policyv1.AlwaysAllow, policyv1.IfHealthyBudget:
		default:
			errs = append(errs, field.NotSupported(specPath.Child("unhealthyPodEvictionPolicy"), *p, supportedUnhealthyPodEvictionPolicies))
		}
	}
	return errs
}

// validateBudgetValue: a non-negative count or a percentage up to 100%.
func validateBudgetValue(v intstr.IntOrString, path *field.Path) field.ErrorList {
	errs := validateIntOrPercent(v, path)
	if n, ok := percentValue(&v); ok && n > 100 {
		errs = append(errs, field.Invalid(path, v, "must not be greater than 100%"))
	}
	return errs
}

// validatePodDisruptionBudgetUpdate: the spec of a policy/v1 budget may
// change; the status (written by the disruption controller and the
// eviction subresource) must hold valid conditions and no negative count.
func validatePodDisruptionBudgetUpdate(pdb, old *policyv1.PodDisruptionBudget) field.ErrorList {
	errs := validateMetaUpdate(&pdb.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validatePodDisruptionBudget(pdb)...)
	return append(errs, validatePodDisruptionBudgetStatus(&pdb.Status)...)
}

func validatePodDisruptionBudgetStatus(st *policyv1.PodDisruptionBudgetStatus) field.ErrorList {
	p := field.NewPath("status")
	errs := metav1validation.ValidateConditions(st.Conditions, p.Child("conditions"))
	errs = append(errs, validateNonnegative(int64(st.DisruptionsAllowed), p.Child("disruptionsAllowed"))...)
	errs = append(errs, validateNonnegative(int64(st.CurrentHealthy), p.Child("currentHealthy"))...)
	errs = append(errs, validateNonnegative(int64(st.DesiredHealthy), p.Child("desiredHealthy"))...)
	return append(errs, validateNonnegative(int64(st.ExpectedPods), p.Child("expectedPods"))...)
}

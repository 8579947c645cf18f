package validation

import (
	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	roleRefPath     = field.NewPath("roleRef")
	subjectsPath    = field.NewPath("subjects")
	rulesPath       = field.NewPath("rules")
	aggregationPath = field.NewPath("aggregationRule", "clusterRoleSelectors")
)

// validateRole checks a Role. The names of roles and bindings need only be
// usable as a path segment, as upstream: "system:node" has a colon.
func validateRole(r *rbacv1.Role) field.ErrorList {
	errs := validateMeta(&r.ObjectMeta, true, path.ValidatePathSegmentName)
	return append(errs, validatePolicyRules(r.Rules, true)...)
}

func validateRoleUpdate(r, old *rbacv1.Role) field.ErrorList {
	return append(validateRole(r), validateMetaUpdate(&r.ObjectMeta, &old.ObjectMeta)...)
}

// validateClusterRole checks a ClusterRole and its aggregationRule.
func validateClusterRole(r *rbacv1.ClusterRole) field.ErrorList {
	errs := validateMeta(&r.ObjectMeta, false, path.ValidatePathSegmentName)
	errs = append(errs, validatePolicyRules(r.Rules, false)...)
	if r.AggregationRule != nil {
		if len(r.AggregationRule.ClusterRoleSelectors) == 0 {
			errs = append(errs, field.Required(aggregationPath, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		for i := range r.AggregationRule.ClusterRoleSelectors {
			sel := &r.AggregationRule.ClusterRoleSelectors[i]
			p := aggregationPath.Index(i)
			errs = append(errs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, p)...)
			if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
				errs = append(errs, field.Invalid(p, sel, "invalid label selector."))
			}
		}
	}
	return errs
}

func validateClusterRoleUpdate(r, old *rbacv1.ClusterRole) field.ErrorList {
	return append(validateClusterRole(r), validateMetaUpdate(&r.ObjectMeta, &old.ObjectMeta)...)
}

// validatePolicyRules checks the rules of a role: verbs are required, and a
// rule grants either resources or non-resource URLs, the latter only in a
// ClusterRole.
func validatePolicyRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, rule := range rules {
		p := rulesPath.Index(i)
		if len(rule.Verbs) == 0 {
			errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
		}
		if len(rule.NonResourceURLs) > 0 {
			if namespaced {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(rule.APIGroups) == 0 {
			errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(rule.Resources) == 0 {
			errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
		}
		if len(rule.ResourceNames) > 0 && len(rule.Resources) > 1 {
			errs = append(errs, field.Required(p.Child("resourceNames"), "resource names cannot apply to multiple resources"))
		}
	}
	return errs
}

// validateRoleBinding checks a RoleBinding: it may refer to a Role or a
// ClusterRole.
func validateRoleBinding(b *rbacv1.RoleBinding) field.ErrorList {
	errs := validateMeta(&b.ObjectMeta, true, path.ValidatePathSegmentName)
	errs = append(errs, validateRoleRef(b.RoleRef, "Role", "ClusterRole")...)
	return append(errs, validateSubjects(b.Subjects, true)...)
}

func validateRoleBindingUpdate(b, old *rbacv1.RoleBinding) field.ErrorList {
	errs := append(validateRoleBinding(b), validateMetaUpdate(&b.ObjectMeta, &old.ObjectMeta)...)
	return append(errs, validateRoleRefUnchanged(b.RoleRef, old.RoleRef)...)
}

// validateClusterRoleBinding checks a ClusterRoleBinding: it may refer to a
// ClusterRole only.
func validateClusterRoleBinding(b *rbacv1.ClusterRoleBinding) field.ErrorList {
	errs := validateMeta(&b.ObjectMeta, false, path.ValidatePathSegmentName)
	errs = append(errs, validateRoleRef(b.RoleRef, "ClusterRole")...)
	return append(errs, validateSubjects(b.Subjects, false)...)
}

func validateClusterRoleBindingUpdate(b, old *rbacv1.ClusterRoleBinding) field.ErrorList {
	errs := append(validateClusterRoleBinding(b), validateMetaUpdate(&b.ObjectMeta, &old.ObjectMeta)...)
	return append(errs, validateRoleRefUnchanged(b.RoleRef, old.RoleRef)...)
}

// validateRoleRef checks a binding's reference: the RBAC group, one of
// kinds, and a name usable as a path segment.
func validateRoleRef(ref rbacv1.RoleRef, kinds ...string) field.ErrorList {
	var errs field.ErrorList
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(roleRefPath.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	known := false
	for _, k := range kinds {
		known = known || ref.Kind == k
	}
	if !known {
		errs = append(errs, field.NotSupported(roleRefPath.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		return append(errs, field.Required(roleRefPath.Child("name"), ""))
	}
	return append(errs, messages(roleRefPath.Child("name"), ref.Name, path.ValidatePathSegmentName(ref.Name, false))...)
}

// validateRoleRefUnchanged refuses a change of a binding's roleRef: it is
// immutable, a binding must be deleted and created again.
func validateRoleRefUnchanged(ref, old rbacv1.RoleRef) field.ErrorList {
	if ref != old {
		return field.ErrorList{field.Invalid(roleRefPath, ref, "cannot change roleRef")}
	}
	return nil
}

// validateSubjects checks who a binding binds: users and groups in the RBAC
// group, ServiceAccounts in the core group with a namespace (which a
// RoleBinding may leave to default to its own).
func validateSubjects(subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, s := range subjects {
		p := subjectsPath.Index(i)
		if s.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			if s.Name != "" {
				errs = append(errs, messages(p.Child("name"), s.Name, apivalidation.NameIsDNSSubdomain(s.Name, false))...)
			}
			if s.APIGroup != "" {
				errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
			}
			if !namespaced && s.Namespace == "" {
				errs = append(errs, field.Required(p.Child("namespace"), ""))
			}
		case rbacv1.UserKind, rbacv1.GroupKind:
			if s.Name == "" {
				errs = append(errs, field.Invalid(p.Child("name"), s.Name, emptySubjectName(s.Kind)))
			}
			if s.APIGroup != rbacv1.GroupName {
				errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
		}
	}
	return errs
}

func emptySubjectName(kind string) string {
	if kind == rbacv1.GroupKind {
		return "group name cannot be empty"
	}
	return "user name cannot be empty"
}

package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// standardResources are the resource names a LimitRange or quota may use
// without a domain (besides huge pages).
var standardResources = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
	corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets, corev1.ResourcePersistentVolumeClaims, corev1.ResourceConfigMaps,
	corev1.ResourceStorage, corev1.ResourceRequestsStorage,
	corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
}

// standardQuotaResources are the names a quota may limit without a domain
// (besides huge pages).
var standardQuotaResources = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsStorage, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
	corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets, corev1.ResourcePersistentVolumeClaims, corev1.ResourceConfigMaps,
	corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
}

// integerResources are counted in whole units.
var integerResources = []corev1.ResourceName{
	corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
	corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
}

var standardLimitTypes = []corev1.LimitType{corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim}

var standardQuotaScopes = []corev1.ResourceQuotaScope{
	corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
	corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort,
	corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity,
}

// Scopes that select on the pod's shape only take the Exists operator.
var existsOnlyScopes = []corev1.ResourceQuotaScope{
	corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort,
	corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
	corev1.ResourceQuotaScopeCrossNamespacePodAffinity,
}

// podComputeQuotaResources are the names a pod scope (other than
// BestEffort, which allows pods only) may be applied to, besides pods.
var podComputeQuotaResources = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
}

var conflictingScopes = [][2]corev1.ResourceQuotaScope{
	{corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort},
	{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating},
}

const invalidQuotaResourceMsg = "must be a standard resource for quota"

// validateLimitRange checks a LimitRange as upstream: qualified limit types
// given once each, known resource names, Pod items without defaults, PVC
// items with a storage min or max, and min <= defaultRequest <= default
// <= max with a maxLimitRequestRatio of at least 1 that max/min allows.
func validateLimitRange(lr *corev1.LimitRange) field.ErrorList {
	errs := validateMeta(&lr.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	return append(errs, validateLimitRangeSpec(&lr.Spec)...)
}

// validateLimitRangeUpdate checks a changed LimitRange: its metadata change
// and its new spec.
func validateLimitRangeUpdate(lr, old *corev1.LimitRange) field.ErrorList {
	errs := validateMetaUpdate(&lr.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateLimitRangeSpec(&lr.Spec)...)
}

func validateLimitRangeSpec(spec *corev1.LimitRangeSpec) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec", "limits")
	seen := map[corev1.LimitType]bool{}
	for i := range spec.Limits {
		item := &spec.Limits[i]
		p := path.Index(i)
		errs = append(errs, validateLimitType(item.Type, p.Child("type"))...)
		if seen[item.Type] {
			errs = append(errs, field.Duplicate(p.Child("type"), item.Type))
		}
		seen[item.Type] = true

		lists := []struct {
			name string
			list corev1.ResourceList
		}{{"max", item.Max}, {"min", item.Min}, {"default", item.Default}, {"defaultRequest", item.DefaultRequest}, {"maxLimitRequestRatio", item.MaxLimitRequestRatio}}
		for _, l := range lists {
			if item.Type == corev1.LimitTypePod && (l.name == "default" || l.name == "defaultRequest") {
				if len(l.list) > 0 {
					errs = append(errs, field.Forbidden(p.Child(l.name), "may not be specified when `type` is 'Pod'"))
				}
				continue
			}
			for _, name := range sortedKeys(l.list) {
				errs = append(errs, validateLimitRangeResourceName(item.Type, name, p.Child(l.name).Key(string(name)))...)
			}
		}
		if item.Type == corev1.LimitTypePersistentVolumeClaim {
			_, haveMin := item.Min[corev1.ResourceStorage]
			_, haveMax := item.Max[corev1.ResourceStorage]
			if !haveMin && !haveMax {
				errs = append(errs, field.Required(p.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
			}
		}
		errs = append(errs, validateLimitRangeValues(item, p)...)
	}
	return errs
}

// validateLimitRangeValues checks how one item's quantities relate.
func validateLimitRangeValues(item *corev1.LimitRangeItem, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	defaults, defaultRequests := item.Default, item.DefaultRequest
	if item.Type == corev1.LimitTypePod {
		defaults, defaultRequests = nil, nil
	}
	names := map[corev1.ResourceName]bool{}
	for _, l := range []corev1.ResourceList{item.Max, item.Min, defaults, defaultRequests, item.MaxLimitRequestRatio} {
		for name := range l {
			names[name] = true
		}
	}
	for _, name := range sortedKeys(names) {
		k := string(name)
		minQ, haveMin := item.Min[name]
		maxQ, haveMax := item.Max[name]
		def, haveDef := defaults[name]
		defReq, haveDefReq := defaultRequests[name]
		ratio, haveRatio := item.MaxLimitRequestRatio[name]
		if haveMin && haveMax && minQ.Cmp(maxQ) > 0 {
			errs = append(errs, field.Invalid(p.Child("min").Key(k), minQ, fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
		}
		if haveDefReq && haveMin && minQ.Cmp(defReq) > 0 {
			errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(k), defReq, fmt.Sprintf("min value %s is greater than default request value %s", minQ.String(), defReq.String())))
		}
		if haveDefReq && haveMax && defReq.Cmp(maxQ) > 0 {
			errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(k), defReq, fmt.Sprintf("default request value %s is greater than max value %s", defReq.String(), maxQ.String())))
		}
		if haveDefReq && haveDef && defReq.Cmp(def) > 0 {
			errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(k), defReq, fmt.Sprintf("default request value %s is greater than default limit value %s", defReq.String(), def.String())))
		}
		if haveDef && haveMin && minQ.Cmp(def) > 0 {
			errs = append(errs, field.Invalid(p.Child("default").Key(k), minQ, fmt.Sprintf("min value %s is greater than default value %s", minQ.String(), def.String())))
		}
		if haveDef && haveMax && def.Cmp(maxQ) > 0 {
			errs = append(errs, field.Invalid(p.Child("default").Key(k), maxQ, fmt.Sprintf("default value %s is greater than max value %s", def.String(), maxQ.String())))
		}
		if haveRatio && ratio.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) < 0 {
			errs = append(errs, field.Invalid(p.Child("maxLimitRequestRatio").Key(k), ratio, fmt.Sprintf("ratio %s is less than 1", ratio.String())))
		}
		if haveRatio && haveMin && haveMax {
			r, lo, hi := float64(ratio.Value()), minQ.Value(), maxQ.Value()
			if ratio.Value() < resource.MaxMilliValue && lo < resource.MaxMilliValue && hi < resource.MaxMilliValue {
				r, lo, hi = float64(ratio.MilliValue())/1000, minQ.MilliValue(), maxQ.MilliValue()
			}
			if limit := float64(hi) / float64(lo); r > limit {
				errs = append(errs, field.Invalid(p.Child("maxLimitRequestRatio").Key(k), ratio, fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), limit)))
			}
		}
		if !overcommitAllowed(name) && haveDef && haveDefReq && def.Cmp(defReq) != 0 {
			errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(k), defReq, fmt.Sprintf("default value %s must equal to defaultRequest value %s in %s", def.String(), defReq.String(), k)))
		}
	}
	return errs
}

// validateLimitType accepts Pod, Container, PersistentVolumeClaim and
// domain-qualified types.
func validateLimitType(t corev1.LimitType, path *field.Path) field.ErrorList {
	if msgs := validation.IsQualifiedName(string(t)); len(msgs) > 0 {
		return messages(path, t, msgs)
	}
	if !strings.Contains(string(t), "/") && !slices.Contains(standardLimitTypes, t) {
		return field.ErrorList{field.Invalid(path, t, "must be a standard limit type or fully qualified")}
	}
	return nil
}

// validateLimitRangeResourceName accepts container resources for Pod and
// Container items and any standard or qualified resource for the others.
func validateLimitRangeResourceName(t corev1.LimitType, name corev1.ResourceName, path *field.Path) field.ErrorList {
	errs := validateStandardResourceName(name, path)
	if len(errs) > 0 || (t != corev1.LimitTypePod && t != corev1.LimitTypeContainer) {
		return errs
	}
	if !strings.Contains(string(name), "/") {
		if !isStandardContainerResource(name) {
			errs = append(errs, field.Invalid(path, name, "must be a standard resource for containers"))
		}
		return errs
	}
	if !isNativeResource(name) && !isExtendedResource(name) {
		errs = append(errs, field.Invalid(path, name, "doesn't follow extended resource name standard"))
	}
	return errs
}

// validateStandardResourceName requires a qualified name that is standard
// when it has no domain.
func validateStandardResourceName(name corev1.ResourceName, path *field.Path) field.ErrorList {
	if msgs := validation.IsQualifiedName(string(name)); len(msgs) > 0 {
		return messages(path, name, msgs)
	}
	if !strings.Contains(string(name), "/") && !slices.Contains(standardResources, name) && !isQuotaHugePages(name) {
		return field.ErrorList{field.Invalid(path, name, "must be a standard resource type or fully qualified")}
	}
	return nil
}

func isQuotaHugePages(name corev1.ResourceName) bool {
	return isHugePages(name) || strings.HasPrefix(string(name), corev1.ResourceRequestsHugePagesPrefix)
}

func isStandardQuotaResource(name corev1.ResourceName) bool {
	return slices.Contains(standardQuotaResources, name) || isQuotaHugePages(name)
}

// validateResourceQuota checks a ResourceQuota as upstream: standard or
// qualified names with non-negative quantities (whole numbers for
// counts), known scopes that apply to the limited names and do not
// conflict, and a well-formed scope selector.
func validateResourceQuota(q *corev1.ResourceQuota) field.ErrorList {
	errs := validateMeta(&q.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	errs = append(errs, validateResourceQuotaSpec(&q.Spec, field.NewPath("spec"))...)
	return append(errs, validateResourceQuotaStatus(&q.Status, field.NewPath("status"))...)
}

// validateResourceQuotaUpdate checks a changed quota, or a status update:
// metadata, the new spec and status, and that spec.scopes did not change.
func validateResourceQuotaUpdate(q, old *corev1.ResourceQuota) field.ErrorList {
	errs := validateMetaUpdate(&q.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateResourceQuotaSpec(&q.Spec, field.NewPath("spec"))...)
	errs = append(errs, validateResourceQuotaStatus(&q.Status, field.NewPath("status"))...)
	oldScopes, newScopes := slices.Clone(old.Spec.Scopes), slices.Clone(q.Spec.Scopes)
	slices.Sort(oldScopes)
	slices.Sort(newScopes)
	if !slices.Equal(slices.Compact(oldScopes), slices.Compact(newScopes)) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "scopes"), q.Spec.Scopes, immutableMsg))
	}
	return errs
}

func validateResourceQuotaSpec(spec *corev1.ResourceQuotaSpec, path *field.Path) field.ErrorList {
	errs := validateQuotaList(spec.Hard, path.Child("hard"))
	errs = append(errs, validateQuotaScopes(spec, path)...)
	if spec.ScopeSelector != nil {
		errs = append(errs, validateScopeSelector(spec, path.Child("scopeSelector"))...)
	}
	return errs
}

func validateResourceQuotaStatus(status *corev1.ResourceQuotaStatus, path *field.Path) field.ErrorList {
	errs := validateQuotaList(status.Hard, path.Child("hard"))
	return append(errs, validateQuotaList(status.Used, path.Child("used"))...)
}

// validateQuotaList checks the names and quantities of a hard or used list.
func validateQuotaList(list corev1.ResourceList, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(list) {
		p := path.Key(string(name))
		errs = append(errs, validateStandardResourceName(name, p)...)
		if !strings.Contains(string(name), "/") && !isStandardQuotaResource(name) {
			errs = append(errs, field.Invalid(p, name, invalidQuotaResourceMsg))
		}
		q := list[name]
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p, q.String(), isNegativeMsg))
		}
		if (slices.Contains(integerResources, name) || isExtendedResource(name)) && q.MilliValue()%1000 != 0 {
			errs = append(errs, field.Invalid(p, q, "must be an integer"))
		}
	}
	return errs
}

// scopeValidFor reports whether a scope can apply to a standard quota name:
// pod scopes limit pods and compute (BestEffort pods only).
func scopeValidFor(scope corev1.ResourceQuotaScope, name corev1.ResourceName) bool {
	switch scope {
	case corev1.ResourceQuotaScopeBestEffort:
		return name == corev1.ResourcePods
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return name == corev1.ResourcePods || slices.Contains(podComputeQuotaResources, name)
	}
	return true
}

func validateQuotaScopes(spec *corev1.ResourceQuotaSpec, path *field.Path) field.ErrorList {
	if len(spec.Scopes) == 0 {
		return nil
	}
	var errs field.ErrorList
	p := path.Child("scopes")
	for _, scope := range spec.Scopes {
		if !slices.Contains(standardQuotaScopes, scope) {
			errs = append(errs, field.Invalid(p, spec.Scopes, "unsupported scope"))
		}
		for _, name := range sortedKeys(spec.Hard) {
			if isStandardQuotaResource(name) && !scopeValidFor(scope, name) {
				errs = append(errs, field.Invalid(p, spec.Scopes, "unsupported scope applied to resource"))
			}
		}
	}
	for _, pair := range conflictingScopes {
		if slices.Contains(spec.Scopes, pair[0]) && slices.Contains(spec.Scopes, pair[1]) {
			errs = append(errs, field.Invalid(p, spec.Scopes, "conflicting scopes"))
		}
	}
	return errs
}

func validateScopeSelector(spec *corev1.ResourceQuotaSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	p := path.Child("matchExpressions")
	var scopes []corev1.ResourceQuotaScope
	for _, req := range spec.ScopeSelector.MatchExpressions {
		if !slices.Contains(standardQuotaScopes, req.ScopeName) {
			errs = append(errs, field.Invalid(p.Child("scopeName"), req.ScopeName, "unsupported scope"))
		}
		for _, name := range sortedKeys(spec.Hard) {
			if isStandardQuotaResource(name) && !scopeValidFor(req.ScopeName, name) {
				errs = append(errs, field.Invalid(p, spec.ScopeSelector, "unsupported scope applied to resource"))
			}
		}
		if slices.Contains(existsOnlyScopes, req.ScopeName) && req.Operator != corev1.ScopeSelectorOpExists {
			errs = append(errs, field.Invalid(p.Child("operator"), req.Operator,
				"must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
		}
		switch req.Operator {
		case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(p.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
			}
		case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
			if len(req.Values) != 0 {
				errs = append(errs, field.Invalid(p.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
			}
		default:
			errs = append(errs, field.Invalid(p.Child("operator"), req.Operator, "not a valid selector operator"))
		}
		scopes = append(scopes, req.ScopeName)
	}
	for _, pair := range conflictingScopes {
		if slices.Contains(scopes, pair[0]) && slices.Contains(scopes, pair[1]) {
			errs = append(errs, field.Invalid(p, spec.Scopes, "conflicting scopes"))
		}
	}
	return errs
}

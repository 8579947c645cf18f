package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	supportedTaintEffects   = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}
	supportedTolerationOps  = []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}
	supportedUnsatisfiable  = []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}
	supportedInclusionPols  = []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore}
	labelSelectorValidation = metav1validation.LabelSelectorValidationOptions{}
)

// validateTolerations checks the tolerations of a pod spec.
func validateTolerations(tolerations []corev1.Toleration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		p := path.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		}
		// An empty key with Exists tolerates every taint.
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(p.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, strings.Join(msgs, ";")))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, supportedTolerationOps))
		}
		if t.Effect != "" && !slices.Contains(supportedTaintEffects, t.Effect) {
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, supportedTaintEffects))
		}
	}
	return errs
}

// validateTaints checks node taints: valid key and value, a known effect,
// and one taint per key and effect.
func validateTaints(taints []corev1.Taint, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, t := range taints {
		p := path.Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, strings.Join(msgs, ";")))
		}
		switch {
		case t.Effect == "":
			errs = append(errs, field.Required(p.Child("effect"), ""))
		case !slices.Contains(supportedTaintEffects, t.Effect):
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, supportedTaintEffects))
		}
		key := string(t.Effect) + "\x00" + t.Key
		if seen[key] {
			dup := field.Duplicate(p, t)
			dup.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, dup)
		}
		seen[key] = true
	}
	return errs
}

// validateAffinity checks node and pod (anti-)affinity terms.
func validateAffinity(a *corev1.Affinity, path *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		p := path.Child("nodeAffinity")
		if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			errs = append(errs, validateNodeSelector(req, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		for i, pref := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			pp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			errs = append(errs, validateWeight(pref.Weight, pp.Child("weight"))...)
			errs = append(errs, validateNodeSelectorTerm(pref.Preference, pp.Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		p := path.Child("podAffinity")
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, p)...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		p := path.Child("podAntiAffinity")
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, p)...)
	}
	return errs
}

func validateWeight(w int32, path *field.Path) field.ErrorList {
	if w <= 0 || w > 100 {
		return field.ErrorList{field.Invalid(path, w, "must be in the range 1-100")}
	}
	return nil
}

func validateNodeSelector(ns *corev1.NodeSelector, path *field.Path) field.ErrorList {
	termsPath := path.Child("nodeSelectorTerms")
	if len(ns.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(termsPath, "must have at least one node selector term")}
	}
	var errs field.ErrorList
	for i, term := range ns.NodeSelectorTerms {
		errs = append(errs, validateNodeSelectorTerm(term, termsPath.Index(i))...)
	}
	return errs
}

func validateNodeSelectorTerm(term corev1.NodeSelectorTerm, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, req := range term.MatchExpressions {
		p := path.Child("matchExpressions").Index(i)
		switch req.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(p.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
			}
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			if len(req.Values) > 0 {
				errs = append(errs, field.Forbidden(p.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
			}
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(req.Values) != 1 {
				errs = append(errs, field.Required(p.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
			}
		default:
			errs = append(errs, field.Invalid(p.Child("operator"), req.Operator, "not a valid selector operator"))
		}
		errs = append(errs, metav1validation.ValidateLabelName(req.Key, p.Child("key"))...)
		for j, v := range req.Values {
			errs = append(errs, messages(p.Child("values").Index(j), v, validation.IsValidLabelValue(v))...)
		}
	}
	for i, req := range term.MatchFields {
		p := path.Child("matchFields").Index(i)
		switch req.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(req.Values) != 1 {
				errs = append(errs, field.Required(p.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
			}
		default:
			errs = append(errs, field.Invalid(p.Child("operator"), req.Operator, "not a valid selector operator"))
		}
		if req.Key != metav1.ObjectNameField {
			errs = append(errs, field.Invalid(p.Child("key"), req.Key, "not a valid field selector key"))
			continue
		}
		for j, v := range req.Values {
			errs = append(errs, validateDNSSubdomain(v, p.Child("values").Index(j))...)
		}
	}
	return errs
}

func validatePodAffinityTerms(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, term := range required {
		errs = append(errs, validatePodAffinityTerm(term, path.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))...)
	}
	for i, w := range preferred {
		p := path.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		errs = append(errs, validateWeight(w.Weight, p.Child("weight"))...)
		errs = append(errs, validatePodAffinityTerm(w.PodAffinityTerm, p.Child("podAffinityTerm"))...)
	}
	return errs
}

func validatePodAffinityTerm(term corev1.PodAffinityTerm, path *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabelSelector(term.LabelSelector, labelSelectorValidation, path.Child("labelSelector"))
	errs = append(errs, metav1validation.ValidateLabelSelector(term.NamespaceSelector, labelSelectorValidation, path.Child("namespaceSelector"))...)
	for _, ns := range term.Namespaces {
		errs = append(errs, validateDNSLabel(ns, path.Child("namespace"))...)
	}
	if term.TopologyKey == "" {
		return append(errs, field.Required(path.Child("topologyKey"), "can not be empty"))
	}
	return append(errs, metav1validation.ValidateLabelName(term.TopologyKey, path.Child("topologyKey"))...)
}

// validateTopologySpread checks topology spread constraints, each of which
// must be unique by topology key and action.
func validateTopologySpread(constraints []corev1.TopologySpreadConstraint, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range constraints {
		p := path.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, isNotPositiveMsg))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
		}
		if !slices.Contains(supportedUnsatisfiable, c.WhenUnsatisfiable) {
			errs = append(errs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, supportedUnsatisfiable))
		}
		for _, later := range constraints[i+1:] {
			if later.TopologyKey == c.TopologyKey && later.WhenUnsatisfiable == c.WhenUnsatisfiable {
				errs = append(errs, field.Duplicate(p.Child("{topologyKey, whenUnsatisfiable}"), fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
		if md := c.MinDomains; md != nil {
			if *md <= 0 {
				errs = append(errs, field.Invalid(p.Child("minDomains"), *md, isNotPositiveMsg))
			}
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				errs = append(errs, field.Invalid(p.Child("minDomains"), *md,
					fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", corev1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		if pol := c.NodeAffinityPolicy; pol != nil && !slices.Contains(supportedInclusionPols, *pol) {
			errs = append(errs, field.NotSupported(p.Child("nodeAffinityPolicy"), *pol, supportedInclusionPols))
		}
		if pol := c.NodeTaintsPolicy; pol != nil && !slices.Contains(supportedInclusionPols, *pol) {
			errs = append(errs, field.NotSupported(p.Child("nodeTaintsPolicy"), *pol, supportedInclusionPols))
		}
		errs = append(errs, metav1validation.ValidateLabelSelector(c.LabelSelector, labelSelectorValidation, p.Child("labelSelector"))...)
	}
	return errs
}

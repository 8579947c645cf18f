package framework

import v1 "k8s.io/api/core/v1"

// ToleratesTaint reports whether a toleration tolerates a taint: an empty
// effect matches every effect, an empty key (with Exists) every key,
// Exists every value, and Equal (or no operator) the same value. The Lt and
// Gt operators are alpha upstream and off by default, so they never match.
func ToleratesTaint(t *v1.Toleration, taint *v1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case "", v1.TolerationOpEqual:
		return t.Value == taint.Value
	case v1.TolerationOpExists:
		return true
	default:
		return false
	}
}

// TolerationsTolerateTaint reports whether any toleration tolerates taint.
func TolerationsTolerateTaint(tolerations []v1.Toleration, taint *v1.Taint) bool {
	for i := range tolerations {
		if ToleratesTaint(&tolerations[i], taint) {
			return true
		}
	}
	return false
}

// FindUntoleratedTaint returns the first taint for which include is true
// and no toleration tolerates it.
func FindUntoleratedTaint(taints []v1.Taint, tolerations []v1.Toleration, include func(*v1.Taint) bool) (v1.Taint, bool) {
	for i := range taints {
		if include != nil && !include(&taints[i]) {
			continue
		}
		if !TolerationsTolerateTaint(tolerations, &taints[i]) {
			return taints[i], true
		}
	}
	return v1.Taint{}, false
}

// DoNotScheduleTaint selects the taints that keep pods off a node: effect
// NoSchedule or NoExecute.
func DoNotScheduleTaint(t *v1.Taint) bool {
	return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
}

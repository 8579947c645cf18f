package quota

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/kubebus/kubebus/apiserver/defaults"
)

// Matches reports whether q constrains obj, an object of gr: q's status
// limits something gr is charged for and obj is in all of q's scopes. As
// upstream, a quota whose status the controller has not filled yet
// matches nothing.
func Matches(q *corev1.ResourceQuota, gr schema.GroupResource, obj runtime.Object) (bool, error) {
	if len(MatchingResources(gr, Names(q.Status.Hard))) == 0 {
		return false, nil
	}
	return InScopes(q, gr, obj)
}

// InScopes reports whether obj, an object of gr, is in every scope of q
// (spec.scopes and spec.scopeSelector). Only pods have scopes: an object of
// any other resource is in none, so a scoped quota never charges it.
func InScopes(q *corev1.ResourceQuota, gr schema.GroupResource, obj runtime.Object) (bool, error) {
	sels := scopeSelectors(q)
	if len(sels) == 0 {
		return true, nil
	}
	pod, ok := obj.(*corev1.Pod)
	if gr != Pods || !ok {
		return false, nil
	}
	for _, sel := range sels {
		in, err := podInScope(sel, pod)
		if err != nil {
			return false, fmt.Errorf("matching scope %s of quota %s: %w", sel.ScopeName, q.Name, err)
		}
		if !in {
			return false, nil
		}
	}
	return true, nil
}

// scopeSelectors returns q's scopes (as Exists requirements) and the
// requirements of its scope selector.
func scopeSelectors(q *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	var out []corev1.ScopedResourceSelectorRequirement
	for _, s := range q.Spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		out = append(out, q.Spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

func podInScope(sel corev1.ScopedResourceSelectorRequirement, pod *corev1.Pod) (bool, error) {
	switch sel.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return terminating(pod), nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return !terminating(pod), nil
	case corev1.ResourceQuotaScopeBestEffort:
		return bestEffort(pod), nil
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !bestEffort(pod), nil
	case corev1.ResourceQuotaScopePriorityClass:
		if sel.Operator == corev1.ScopeSelectorOpExists {
			return pod.Spec.PriorityClassName != "", nil
		}
		s, err := scopeSelector(sel)
		if err != nil {
			return false, err
		}
		var set labels.Set
		if pod.Spec.PriorityClassName != "" {
			set = labels.Set{string(corev1.ResourceQuotaScopePriorityClass): pod.Spec.PriorityClassName}
		}
		return s.Matches(set), nil
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return crossNamespaceAffinity(pod), nil
	}
	return false, nil
}

// scopeSelector turns a requirement into a label selector on the scope name.
func scopeSelector(sel corev1.ScopedResourceSelectorRequirement) (labels.Selector, error) {
	ops := map[corev1.ScopeSelectorOperator]selection.Operator{
		corev1.ScopeSelectorOpIn: selection.In, corev1.ScopeSelectorOpNotIn: selection.NotIn,
		corev1.ScopeSelectorOpExists: selection.Exists, corev1.ScopeSelectorOpDoesNotExist: selection.DoesNotExist,
	}
	op, ok := ops[sel.Operator]
	if !ok {
		return nil, fmt.Errorf("%q is not a valid scope selector operator", sel.Operator)
	}
	r, err := labels.NewRequirement(string(sel.ScopeName), op, sel.Values)
	if err != nil {
		return nil, err
	}
	return labels.NewSelector().Add(*r), nil
}

// terminating pods have an active deadline.
func terminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

func bestEffort(pod *corev1.Pod) bool {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass == corev1.PodQOSBestEffort
	}
	return defaults.PodQOSClass(pod) == corev1.PodQOSBestEffort
}

// crossNamespaceAffinity reports whether a pod (anti-)affinity term names
// other namespaces or selects them.
func crossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	var terms []corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	for _, t := range terms {
		if len(t.Namespaces) != 0 || t.NamespaceSelector != nil {
			return true
		}
	}
	return false
}

// Total is what objs, the objects of gr in q's namespace, use of the names
// q.Spec.Hard limits: every name gr is charged for starts at zero, and each
// object in q's scopes adds its usage. It is nil when q limits nothing gr
// is charged for.
func Total(q *corev1.ResourceQuota, gr schema.GroupResource, objs []runtime.Object, now time.Time) (corev1.ResourceList, error) {
	names := MatchingResources(gr, Names(q.Spec.Hard))
	if len(names) == 0 {
		return nil, nil
	}
	sum := corev1.ResourceList{}
	for _, obj := range objs {
		in, err := InScopes(q, gr, obj)
		if err != nil {
			return nil, err
		}
		if !in {
			continue
		}
		u, err := Usage(gr, obj, now)
		if err != nil {
			return nil, err
		}
		sum = Add(sum, Mask(u, names))
	}
	for _, name := range names {
		if _, ok := sum[name]; !ok {
			sum[name] = resourceZero()
		}
	}
	return sum, nil
}

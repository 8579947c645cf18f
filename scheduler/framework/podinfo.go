package framework

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
)

// PodInfo is a pod with what the scheduler derives from it once: its
// requests and its parsed pod (anti-)affinity terms.
type PodInfo struct {
	Pod *v1.Pod
	// Requests is PodRequests(pod, false): what NodeResourcesFit checks.
	Requests Resource
	// NonZeroRequests is PodRequests(pod, true): what scoring uses.
	NonZeroRequests Resource

	RequiredAffinityTerms      []AffinityTerm
	RequiredAntiAffinityTerms  []AffinityTerm
	PreferredAffinityTerms     []WeightedAffinityTerm
	PreferredAntiAffinityTerms []WeightedAffinityTerm
}

// AffinityTerm is a parsed v1.PodAffinityTerm. A pod matches it when its
// namespace is in Namespaces or its namespace's labels match
// NamespaceSelector, and its labels match Selector.
type AffinityTerm struct {
	Namespaces        sets.Set[string]
	Selector          labels.Selector
	TopologyKey       string
	NamespaceSelector labels.Selector
}

// WeightedAffinityTerm is a preferred term with its weight.
type WeightedAffinityTerm struct {
	AffinityTerm
	Weight int32
}

// Matches reports whether pod, whose namespace carries nsLabels, matches
// the term.
func (t *AffinityTerm) Matches(pod *v1.Pod, nsLabels labels.Set) bool {
	if t.Namespaces.Has(pod.Namespace) || t.NamespaceSelector.Matches(nsLabels) {
		return t.Selector.Matches(labels.Set(pod.Labels))
	}
	return false
}

// NewPodInfo parses pod. Terms whose selectors do not parse are left out
// and reported in the error; the PodInfo is usable either way.
func NewPodInfo(pod *v1.Pod) (*PodInfo, error) {
	pi := &PodInfo{
		Pod:             pod,
		Requests:        PodRequests(pod, false),
		NonZeroRequests: PodRequests(pod, true),
	}
	var errs []error
	if a := pod.Spec.Affinity; a != nil {
		if pa := a.PodAffinity; pa != nil {
			pi.RequiredAffinityTerms = affinityTerms(pod, pa.RequiredDuringSchedulingIgnoredDuringExecution, &errs)
			pi.PreferredAffinityTerms = weightedTerms(pod, pa.PreferredDuringSchedulingIgnoredDuringExecution, &errs)
		}
		if pa := a.PodAntiAffinity; pa != nil {
			pi.RequiredAntiAffinityTerms = affinityTerms(pod, pa.RequiredDuringSchedulingIgnoredDuringExecution, &errs)
			pi.PreferredAntiAffinityTerms = weightedTerms(pod, pa.PreferredDuringSchedulingIgnoredDuringExecution, &errs)
		}
	}
	if len(errs) > 0 {
		return pi, fmt.Errorf("parsing affinity of pod %s/%s: %w", pod.Namespace, pod.Name, errors.Join(errs...))
	}
	return pi, nil
}

// PodInfoOf is NewPodInfo that ignores parse errors (the terms that
// failed are dropped), for pods already on nodes.
func PodInfoOf(pod *v1.Pod) *PodInfo {
	pi, _ := NewPodInfo(pod)
	return pi
}

// HasAffinity reports whether the pod has any pod affinity or anti-affinity
// term.
func (pi *PodInfo) HasAffinity() bool {
	return len(pi.RequiredAffinityTerms)+len(pi.RequiredAntiAffinityTerms)+
		len(pi.PreferredAffinityTerms)+len(pi.PreferredAntiAffinityTerms) > 0
}

// NewAffinityTerm parses one term of pod. With neither namespaces nor a
// namespaceSelector the term applies to the pod's own namespace; an empty
// namespaceSelector ({}) matches every namespace.
func NewAffinityTerm(pod *v1.Pod, term *v1.PodAffinityTerm) (AffinityTerm, error) {
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return AffinityTerm{}, err
	}
	nsSel, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
	if err != nil {
		return AffinityTerm{}, err
	}
	ns := sets.New[string]()
	if len(term.Namespaces) == 0 && term.NamespaceSelector == nil {
		ns.Insert(pod.Namespace)
	} else {
		ns.Insert(term.Namespaces...)
	}
	return AffinityTerm{Namespaces: ns, Selector: sel, TopologyKey: term.TopologyKey, NamespaceSelector: nsSel}, nil
}

func affinityTerms(pod *v1.Pod, in []v1.PodAffinityTerm, errs *[]error) []AffinityTerm {
	var out []AffinityTerm
	for i := range in {
		t, err := NewAffinityTerm(pod, &in[i])
		if err != nil {
			*errs = append(*errs, err)
			continue
		}
		out = append(out, t)
	}
	return out
}

func weightedTerms(pod *v1.Pod, in []v1.WeightedPodAffinityTerm, errs *[]error) []WeightedAffinityTerm {
	var out []WeightedAffinityTerm
	for i := range in {
		t, err := NewAffinityTerm(pod, &in[i].PodAffinityTerm)
		if err != nil {
			*errs = append(*errs, err)
			continue
		}
		out = append(out, WeightedAffinityTerm{AffinityTerm: t, Weight: in[i].Weight})
	}
	return out
}

// PodKey identifies a pod in the snapshot: its UID, or namespace/name when
// it has none.
func PodKey(pod *v1.Pod) string {
	if pod.UID != "" {
		return string(pod.UID)
	}
	return pod.Namespace + "/" + pod.Name
}

// PodPriority returns spec.priority, 0 when unset.
func PodPriority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

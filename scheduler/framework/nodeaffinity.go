package framework

import (
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeSelector is a parsed v1.NodeSelector: its terms are ORed, and a node
// matches a term when it meets all of the term's label expressions and
// field expressions (only metadata.name is a field). A term that is empty
// or does not parse matches nothing.
type NodeSelector struct {
	terms []NodeSelectorTerm
}

// NodeSelectorTerm is one parsed term.
type NodeSelectorTerm struct {
	exprs  []v1.NodeSelectorRequirement
	fields []v1.NodeSelectorRequirement
	valid  bool
}

// NewNodeSelector parses a node selector; nil gives nil.
func NewNodeSelector(ns *v1.NodeSelector) *NodeSelector {
	if ns == nil {
		return nil
	}
	out := &NodeSelector{terms: make([]NodeSelectorTerm, 0, len(ns.NodeSelectorTerms))}
	for i := range ns.NodeSelectorTerms {
		out.terms = append(out.terms, NewNodeSelectorTerm(&ns.NodeSelectorTerms[i]))
	}
	return out
}

// Match reports whether the node matches any term.
func (s *NodeSelector) Match(node *v1.Node) bool {
	for i := range s.terms {
		if s.terms[i].Match(node) {
			return true
		}
	}
	return false
}

// NewNodeSelectorTerm parses one term.
func NewNodeSelectorTerm(t *v1.NodeSelectorTerm) NodeSelectorTerm {
	term := NodeSelectorTerm{exprs: t.MatchExpressions, fields: t.MatchFields, valid: true}
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		term.valid = false
	}
	for _, r := range t.MatchExpressions {
		if !validRequirement(&r) {
			term.valid = false
		}
	}
	for _, r := range t.MatchFields {
		if r.Key != metav1.ObjectNameField || (r.Operator != v1.NodeSelectorOpIn && r.Operator != v1.NodeSelectorOpNotIn) || len(r.Values) != 1 {
			term.valid = false
		}
	}
	return term
}

func validRequirement(r *v1.NodeSelectorRequirement) bool {
	switch r.Operator {
	case v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn:
		return len(r.Values) > 0
	case v1.NodeSelectorOpExists, v1.NodeSelectorOpDoesNotExist:
		return len(r.Values) == 0
	case v1.NodeSelectorOpGt, v1.NodeSelectorOpLt:
		if len(r.Values) != 1 {
			return false
		}
		_, err := strconv.ParseInt(r.Values[0], 10, 64)
		return err == nil
	}
	return false
}

// Match reports whether the node matches the term.
func (t *NodeSelectorTerm) Match(node *v1.Node) bool {
	if !t.valid {
		return false
	}
	for i := range t.exprs {
		if !matchRequirement(&t.exprs[i], node.Labels) {
			return false
		}
	}
	for i := range t.fields {
		r := &t.fields[i]
		in := slices.Contains(r.Values, node.Name)
		if (r.Operator == v1.NodeSelectorOpIn) != in {
			return false
		}
	}
	return true
}

func matchRequirement(r *v1.NodeSelectorRequirement, l map[string]string) bool {
	v, ok := l[r.Key]
	switch r.Operator {
	case v1.NodeSelectorOpIn:
		return ok && slices.Contains(r.Values, v)
	case v1.NodeSelectorOpNotIn:
		return !ok || !slices.Contains(r.Values, v)
	case v1.NodeSelectorOpExists:
		return ok
	case v1.NodeSelectorOpDoesNotExist:
		return !ok
	case v1.NodeSelectorOpGt, v1.NodeSelectorOpLt:
		if !ok {
			return false
		}
		have, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return false
		}
		want, _ := strconv.ParseInt(r.Values[0], 10, 64)
		if r.Operator == v1.NodeSelectorOpGt {
			return have > want
		}
		return have < want
	}
	return false
}

// RequiredNodeAffinity is a pod's hard node constraints: spec.nodeSelector
// and the required terms of spec.affinity.nodeAffinity. Both must hold.
type RequiredNodeAffinity struct {
	labels   map[string]string
	selector *NodeSelector
}

// GetRequiredNodeAffinity parses the pod's hard node constraints.
func GetRequiredNodeAffinity(pod *v1.Pod) RequiredNodeAffinity {
	r := RequiredNodeAffinity{labels: pod.Spec.NodeSelector}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		r.selector = NewNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
	}
	return r
}

// Match reports whether node satisfies the constraints.
func (r RequiredNodeAffinity) Match(node *v1.Node) bool {
	for k, v := range r.labels {
		if lv, ok := node.Labels[k]; !ok || lv != v {
			return false
		}
	}
	return r.selector == nil || r.selector.Match(node)
}

// PreferredSchedulingTerms are a pod's parsed preferred node affinity
// terms with their weights.
type PreferredSchedulingTerms struct {
	terms   []NodeSelectorTerm
	weights []int32
}

// NewPreferredSchedulingTerms parses terms, dropping zero weights.
func NewPreferredSchedulingTerms(terms []v1.PreferredSchedulingTerm) *PreferredSchedulingTerms {
	out := &PreferredSchedulingTerms{}
	for i := range terms {
		if terms[i].Weight == 0 {
			continue
		}
		out.terms = append(out.terms, NewNodeSelectorTerm(&terms[i].Preference))
		out.weights = append(out.weights, terms[i].Weight)
	}
	return out
}

// Len returns the number of terms.
func (p *PreferredSchedulingTerms) Len() int { return len(p.terms) }

// Score returns the sum of the weights of the terms node matches.
func (p *PreferredSchedulingTerms) Score(node *v1.Node) int64 {
	var s int64
	for i := range p.terms {
		if p.terms[i].Match(node) {
			s += int64(p.weights[i])
		}
	}
	return s
}

// Package interpodaffinity places pods relative to other pods: the filter
// enforces required pod affinity and anti-affinity (the incoming pod's, and
// existing pods' anti-affinity against the incoming pod) per topology
// domain; the score follows preferred terms (and existing pods' required
// affinity, with HardPodAffinityWeight). Terms may select namespaces by
// label (namespaceSelector), resolved against the snapshot's namespaces.
package interpodaffinity

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubebus/kubebus/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "InterPodAffinity"

const (
	// ErrReasonExistingAntiAffinityRulesNotMatch: an existing pod's
	// anti-affinity rejects the incoming pod.
	ErrReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
	// ErrReasonAffinityRulesNotMatch: the incoming pod's affinity is not met.
	ErrReasonAffinityRulesNotMatch = "node(s) didn't match pod affinity rules"
	// ErrReasonAntiAffinityRulesNotMatch: the incoming pod's anti-affinity
	// is not met.
	ErrReasonAntiAffinityRulesNotMatch = "node(s) didn't match pod anti-affinity rules"
)

// Args are the plugin's arguments (InterPodAffinityArgs).
type Args struct {
	// HardPodAffinityWeight is the score weight of an existing pod's
	// required affinity term that the incoming pod matches (0-100,
	// default 1).
	HardPodAffinityWeight *int32 `json:"hardPodAffinityWeight,omitempty"`
	// IgnorePreferredTermsOfExistingPods skips existing pods' preferred
	// terms when the incoming pod has none of its own.
	IgnorePreferredTermsOfExistingPods bool `json:"ignorePreferredTermsOfExistingPods,omitempty"`
}

// InterPodAffinity is the plugin.
type InterPodAffinity struct {
	hardWeight   int32
	ignoreOthers bool
}

var (
	_ framework.PreFilterPlugin     = (*InterPodAffinity)(nil)
	_ framework.PreFilterExtensions = (*InterPodAffinity)(nil)
	_ framework.FilterPlugin        = (*InterPodAffinity)(nil)
	_ framework.PreScorePlugin      = (*InterPodAffinity)(nil)
	_ framework.ScorePlugin         = (*InterPodAffinity)(nil)
	_ framework.ScoreNormalizer     = (*InterPodAffinity)(nil)
)

// New returns the plugin.
func New(args Args) (*InterPodAffinity, error) {
	w := int32(1)
	if args.HardPodAffinityWeight != nil {
		w = *args.HardPodAffinityWeight
	}
	if w < 0 || w > 100 {
		return nil, fmt.Errorf("%s args: hardPodAffinityWeight: %d is not in [0, 100]", Name, w)
	}
	return &InterPodAffinity{hardWeight: w, ignoreOthers: args.IgnorePreferredTermsOfExistingPods}, nil
}

// Name returns Name.
func (*InterPodAffinity) Name() string { return Name }

// mergeNamespaces resolves a term's namespaceSelector into its namespace
// set against the snapshot's namespaces, so matching the incoming pod's
// terms needs no namespace labels. An empty selector ({}) matches every
// namespace and is kept as it is.
func mergeNamespaces(t *framework.AffinityTerm, snap *framework.Snapshot) {
	if t.NamespaceSelector.Empty() {
		return
	}
	for _, ns := range snap.NamespacesMatching(t.NamespaceSelector) {
		t.Namespaces.Insert(ns)
	}
	t.NamespaceSelector = labels.Nothing()
}

type topologyPair struct{ key, value string }

type topologyCounts map[topologyPair]int64

func (m topologyCounts) update(node *v1.Node, key string, delta int64) {
	if v, ok := node.Labels[key]; ok {
		p := topologyPair{key, v}
		m[p] += delta
		if m[p] == 0 {
			delete(m, p)
		}
	}
}

// addAffinity counts pod on node for each of terms when pod matches all
// of them (required affinity terms are ANDed).
func (m topologyCounts) addAffinity(terms []framework.AffinityTerm, pod *v1.Pod, node *v1.Node, delta int64) {
	if len(terms) == 0 || !matchesAll(terms, pod) {
		return
	}
	for i := range terms {
		m.update(node, terms[i].TopologyKey, delta)
	}
}

// addAntiAffinity counts pod on node for each term it matches.
func (m topologyCounts) addAntiAffinity(terms []framework.AffinityTerm, pod *v1.Pod, nsLabels labels.Set, node *v1.Node, delta int64) {
	for i := range terms {
		if terms[i].Matches(pod, nsLabels) {
			m.update(node, terms[i].TopologyKey, delta)
		}
	}
}

func (m topologyCounts) clone() topologyCounts {
	out := make(topologyCounts, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func matchesAll(terms []framework.AffinityTerm, pod *v1.Pod) bool {
	for i := range terms {
		if !terms[i].Matches(pod, nil) {
			return false
		}
	}
	return true
}

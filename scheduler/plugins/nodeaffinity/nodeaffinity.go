// Package nodeaffinity filters nodes by a pod's spec.nodeSelector and
// required node affinity, and scores them by its preferred node affinity.
// The scheduler configuration may add affinity enforced on every pod of a
// profile (Args.AddedAffinity).
package nodeaffinity

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubebus/kubebus/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "NodeAffinity"

const (
	// ErrReasonPod is the reason for a node the pod's selector or
	// affinity excludes.
	ErrReasonPod = "node(s) didn't match Pod's node affinity/selector"
	// ErrReasonEnforced is the reason for a node Args.AddedAffinity
	// excludes.
	ErrReasonEnforced = "node(s) didn't match scheduler-enforced node affinity"
	// ErrReasonConflict is the reason when the pod's required terms name
	// node names that cannot all hold.
	ErrReasonConflict = "pod affinity terms conflict"

	preFilterKey framework.StateKey = "PreFilter" + Name
	preScoreKey  framework.StateKey = "PreScore" + Name
)

// Args are the plugin's arguments (NodeAffinityArgs).
type Args struct {
	// AddedAffinity applies to every pod scheduled by the profile, in
	// addition to the pod's own.
	AddedAffinity *v1.NodeAffinity `json:"addedAffinity,omitempty"`
}

// NodeAffinity is the plugin.
type NodeAffinity struct {
	addedSelector  *framework.NodeSelector
	addedPreferred *framework.PreferredSchedulingTerms
}

var (
	_ framework.PreFilterPlugin = (*NodeAffinity)(nil)
	_ framework.FilterPlugin    = (*NodeAffinity)(nil)
	_ framework.PreScorePlugin  = (*NodeAffinity)(nil)
	_ framework.ScorePlugin     = (*NodeAffinity)(nil)
	_ framework.ScoreNormalizer = (*NodeAffinity)(nil)
)

// New returns the plugin.
func New(args Args) *NodeAffinity {
	pl := &NodeAffinity{}
	if a := args.AddedAffinity; a != nil {
		pl.addedSelector = framework.NewNodeSelector(a.RequiredDuringSchedulingIgnoredDuringExecution)
		if len(a.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
			pl.addedPreferred = framework.NewPreferredSchedulingTerms(a.PreferredDuringSchedulingIgnoredDuringExecution)
		}
	}
	return pl
}

// Name returns Name.
func (*NodeAffinity) Name() string { return Name }

type preFilterState struct {
	required framework.RequiredNodeAffinity
}

func (s *preFilterState) Clone() framework.StateData { return s }

// PreFilter parses the pod's required node constraints; Skip if it has
// none. Terms that list node names (matchFields metadata.name In) narrow
// the candidate nodes to those names.
func (pl *NodeAffinity) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ *framework.Snapshot) (*framework.PreFilterResult, *framework.Status) {
	a := pod.Spec.Affinity
	noAffinity := a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil
	if noAffinity && pl.addedSelector == nil && pod.Spec.NodeSelector == nil {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterKey, &preFilterState{required: framework.GetRequiredNodeAffinity(pod)})
	if noAffinity {
		return nil, nil
	}
	var names sets.Set[string]
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		var termNames sets.Set[string]
		for _, r := range t.MatchFields {
			if r.Key != metav1.ObjectNameField || r.Operator != v1.NodeSelectorOpIn {
				continue
			}
			s := sets.New(r.Values...)
			if termNames == nil {
				termNames = s
			} else {
				termNames = termNames.Intersection(s)
			}
		}
		if termNames == nil {
			return nil, nil // this term allows any node; terms are ORed
		}
		names = names.Union(termNames)
	}
	if names != nil && len(names) == 0 {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonConflict)
	}
	if len(names) > 0 {
		return &framework.PreFilterResult{NodeNames: names}, nil
	}
	return nil, nil
}

// Filter rejects, unresolvably, a node the constraints exclude.
func (pl *NodeAffinity) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	node := ni.Node()
	if pl.addedSelector != nil && !pl.addedSelector.Match(node) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonEnforced)
	}
	s, err := framework.ReadAs[*preFilterState](state, preFilterKey)
	if err != nil {
		s = &preFilterState{required: framework.GetRequiredNodeAffinity(pod)}
	}
	if !s.required.Match(node) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPod)
	}
	return nil
}

type preScoreState struct {
	preferred *framework.PreferredSchedulingTerms
}

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore parses the preferred terms; Skip if there are none.
func (pl *NodeAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ *framework.Snapshot, _ []*framework.NodeInfo) *framework.Status {
	var preferred *framework.PreferredSchedulingTerms
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		preferred = framework.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if preferred == nil && pl.addedPreferred == nil {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preScoreKey, &preScoreState{preferred: preferred})
	return nil
}

// Score sums the weights of the preferred terms the node matches.
func (pl *NodeAffinity) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	var n int64
	if pl.addedPreferred != nil {
		n += pl.addedPreferred.Score(ni.Node())
	}
	s, err := framework.ReadAs[*preScoreState](state, preScoreKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	if s.preferred != nil {
		n += s.preferred.Score(ni.Node())
	}
	return n, nil
}

// NormalizeScore scales the sums so the best node scores 100.
func (*NodeAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	return framework.DefaultNormalizeScore(framework.MaxNodeScore, false, scores)
}

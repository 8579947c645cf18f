package interpodaffinity

import (
	"context"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubebus/kubebus/scheduler/framework"
)

const preScoreKey framework.StateKey = "PreScore" + Name

// scores is topology key -> value -> score.
type scores map[string]map[string]int64

func (m scores) add(t *framework.AffinityTerm, weight int64, pod *v1.Pod, nsLabels labels.Set, node *v1.Node) {
	if !t.Matches(pod, nsLabels) {
		return
	}
	v, ok := node.Labels[t.TopologyKey]
	if !ok {
		return
	}
	if m[t.TopologyKey] == nil {
		m[t.TopologyKey] = map[string]int64{}
	}
	m[t.TopologyKey][v] += weight
}

type preScoreState struct{ topology scores }

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore sums, per topology domain, the weights of the terms relating
// the pod and existing pods: the pod's preferred affinity (+) and
// anti-affinity (−) matching existing pods, existing pods' required
// affinity matching the pod (+HardPodAffinityWeight), and existing pods'
// preferred affinity (+) and anti-affinity (−) matching the pod. Without
// preferred terms of its own, only nodes with pods that have affinity
// terms are looked at. Skip when no domain gets a score.
func (pl *InterPodAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, snap *framework.Snapshot, nodes []*framework.NodeInfo) *framework.Status {
	if len(nodes) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	a := pod.Spec.Affinity
	hasOwn := a != nil && ((a.PodAffinity != nil && len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0) ||
		(a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0))
	if pl.ignoreOthers && !hasOwn {
		return framework.NewStatus(framework.Skip)
	}
	pi := framework.PodInfoOf(pod)
	for i := range pi.PreferredAffinityTerms {
		mergeNamespaces(&pi.PreferredAffinityTerms[i].AffinityTerm, snap)
	}
	for i := range pi.PreferredAntiAffinityTerms {
		mergeNamespaces(&pi.PreferredAntiAffinityTerms[i].AffinityTerm, snap)
	}
	nsLabels := snap.NamespaceLabels(pod.Namespace)
	all := snap.HavePodsWithAffinity()
	if hasOwn {
		all = snap.NodeInfos()
	}
	topo := scores{}
	for _, ni := range all {
		node := ni.Node()
		if len(node.Labels) == 0 {
			continue
		}
		existingPods := ni.PodsWithAffinity
		if hasOwn {
			existingPods = ni.Pods
		}
		for _, e := range existingPods {
			for i := range pi.PreferredAffinityTerms {
				t := &pi.PreferredAffinityTerms[i]
				topo.add(&t.AffinityTerm, int64(t.Weight), e.Pod, nil, node)
			}
			for i := range pi.PreferredAntiAffinityTerms {
				t := &pi.PreferredAntiAffinityTerms[i]
				topo.add(&t.AffinityTerm, -int64(t.Weight), e.Pod, nil, node)
			}
			if pl.hardWeight > 0 {
				for i := range e.RequiredAffinityTerms {
					topo.add(&e.RequiredAffinityTerms[i], int64(pl.hardWeight), pod, nsLabels, node)
				}
			}
			for i := range e.PreferredAffinityTerms {
				t := &e.PreferredAffinityTerms[i]
				topo.add(&t.AffinityTerm, int64(t.Weight), pod, nsLabels, node)
			}
			for i := range e.PreferredAntiAffinityTerms {
				t := &e.PreferredAntiAffinityTerms[i]
				topo.add(&t.AffinityTerm, -int64(t.Weight), pod, nsLabels, node)
			}
		}
	}
	if len(topo) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preScoreKey, &preScoreState{topology: topo})
	return nil
}

// Score sums the scores of the node's domains.
func (pl *InterPodAffinity) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	s, err := framework.ReadAs[*preScoreState](state, preScoreKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	var n int64
	for key, values := range s.topology {
		if v, ok := ni.Node().Labels[key]; ok {
			n += values[v]
		}
	}
	return n, nil
}

// NormalizeScore maps [min, max] onto [0, 100].
func (pl *InterPodAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, list framework.NodeScoreList) *framework.Status {
	if len(list) == 0 {
		return nil
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range list {
		lo, hi = min(lo, s.Score), max(hi, s.Score)
	}
	for i := range list {
		if hi > lo {
			list[i].Score = int64(float64(framework.MaxNodeScore) * float64(list[i].Score-lo) / float64(hi-lo))
		} else {
			list[i].Score = 0
		}
	}
	return nil
}

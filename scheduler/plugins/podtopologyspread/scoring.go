package podtopologyspread

import (
	"context"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubebus/kubebus/scheduler/framework"
)

const preScoreKey framework.StateKey = "PreScore" + Name

type preScoreState struct {
	constraints []constraint
	ignored     sets.Set[string] // nodes lacking a topology key
	// counts[i] maps the domains of the candidate nodes to matching pods
	// (not for hostname, which Score counts on the node itself).
	counts  []map[string]int64
	weights []float64 // per constraint: log(number of domains + 2)
}

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore counts matching pods per domain for ScheduleAnyway
// constraints. Skip without such constraints.
func (pl *PodTopologySpread) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, snap *framework.Snapshot, nodes []*framework.NodeInfo) *framework.Status {
	all := snap.NodeInfos()
	if len(nodes) == 0 || len(all) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	cs, err := pl.constraints(pod, snap, v1.ScheduleAnyway)
	if err != nil {
		return framework.AsStatus(err)
	}
	if len(cs) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	// System defaults do not require every key, so nodes without a zone
	// still spread by hostname.
	requireAll := len(pod.Spec.TopologySpreadConstraints) > 0 || !pl.systemDefaulted
	s := &preScoreState{constraints: cs, ignored: sets.New[string](), counts: make([]map[string]int64, len(cs)), weights: make([]float64, len(cs))}
	sizes := make([]int, len(cs))
	for i := range cs {
		s.counts[i] = map[string]int64{}
	}
	for _, ni := range nodes {
		node := ni.Node()
		if requireAll && !hasAllKeys(node, cs) {
			s.ignored.Insert(node.Name)
			continue
		}
		for i := range cs {
			if cs[i].topologyKey == v1.LabelHostname {
				continue
			}
			v := node.Labels[cs[i].topologyKey]
			if _, ok := s.counts[i][v]; !ok {
				s.counts[i][v] = 0
				sizes[i]++
			}
		}
	}
	for i := range cs {
		n := sizes[i]
		if cs[i].topologyKey == v1.LabelHostname {
			n = len(nodes) - s.ignored.Len()
		}
		s.weights[i] = math.Log(float64(n + 2))
	}
	required := framework.GetRequiredNodeAffinity(pod)
	for _, ni := range all {
		node := ni.Node()
		if requireAll && !hasAllKeys(node, cs) {
			continue
		}
		for i := range cs {
			c := &cs[i]
			if !c.includes(pod, node, &required) {
				continue
			}
			v := node.Labels[c.topologyKey]
			if _, ok := s.counts[i][v]; !ok {
				continue
			}
			s.counts[i][v] += int64(countMatching(ni.Pods, c.selector, pod.Namespace))
		}
	}
	state.Write(preScoreKey, s)
	return nil
}

// Score sums, over the constraints, the matching pods in the node's domain
// times the constraint's weight, plus maxSkew−1. Lower is better;
// NormalizeScore inverts it.
func (pl *PodTopologySpread) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	s, err := framework.ReadAs[*preScoreState](state, preScoreKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	node := ni.Node()
	if s.ignored.Has(node.Name) {
		return 0, nil
	}
	var score float64
	for i := range s.constraints {
		c := &s.constraints[i]
		v, ok := node.Labels[c.topologyKey]
		if !ok {
			continue
		}
		var n int64
		if c.topologyKey == v1.LabelHostname {
			n = int64(countMatching(ni.Pods, c.selector, pod.Namespace))
		} else {
			n = s.counts[i][v]
		}
		score += float64(n)*s.weights[i] + float64(c.maxSkew-1)
	}
	return int64(math.Round(score)), nil
}

// NormalizeScore maps the raw scores so the fewest matching pods scores
// 100: 100 × (max + min − score) / max. Nodes lacking a topology key score
// 0.
func (pl *PodTopologySpread) NormalizeScore(_ context.Context, state *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	s, err := framework.ReadAs[*preScoreState](state, preScoreKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, sc := range scores {
		if s.ignored.Has(sc.Name) {
			continue
		}
		lo, hi = min(lo, sc.Score), max(hi, sc.Score)
	}
	for i := range scores {
		switch {
		case s.ignored.Has(scores[i].Name):
			scores[i].Score = 0
		case hi == 0:
			scores[i].Score = framework.MaxNodeScore
		default:
			scores[i].Score = framework.MaxNodeScore * (hi + lo - scores[i].Score) / hi
		}
	}
	return nil
}

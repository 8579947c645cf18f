package podtopologyspread

import (
	"context"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubebus/kubebus/scheduler/framework"
)

const preFilterKey framework.StateKey = "PreFilter" + Name

type preFilterState struct {
	constraints []constraint
	// counts[i] maps each domain of constraint i (a value of its topology
	// key on an eligible node) to the number of matching pods there.
	counts []map[string]int
	// mins[i] is the smallest of counts[i].
	mins     []int
	required framework.RequiredNodeAffinity
}

func (s *preFilterState) Clone() framework.StateData {
	out := &preFilterState{constraints: s.constraints, required: s.required,
		counts: make([]map[string]int, len(s.counts)), mins: append([]int(nil), s.mins...)}
	for i, m := range s.counts {
		c := make(map[string]int, len(m))
		for k, v := range m {
			c[k] = v
		}
		out.counts[i] = c
	}
	return out
}

func (s *preFilterState) recomputeMin(i int) {
	m := math.MaxInt
	for _, n := range s.counts[i] {
		m = min(m, n)
	}
	s.mins[i] = m
}

// minMatch is the global minimum for constraint i: 0 while fewer domains
// than minDomains exist.
func (s *preFilterState) minMatch(i int) int {
	if len(s.counts[i]) < int(s.constraints[i].minDomains) {
		return 0
	}
	return s.mins[i]
}

// PreFilter counts, per DoNotSchedule constraint and domain, the pods
// matching the constraint's selector in the pod's namespace, over the
// nodes that have every constraint's topology key and pass its inclusion
// policies. Skip without DoNotSchedule constraints.
func (pl *PodTopologySpread) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, snap *framework.Snapshot) (*framework.PreFilterResult, *framework.Status) {
	cs, err := pl.constraints(pod, snap, v1.DoNotSchedule)
	if err != nil {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
	}
	if len(cs) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	s := &preFilterState{constraints: cs, counts: make([]map[string]int, len(cs)), mins: make([]int, len(cs)),
		required: framework.GetRequiredNodeAffinity(pod)}
	for i := range cs {
		s.counts[i] = map[string]int{}
	}
	for _, ni := range snap.NodeInfos() {
		node := ni.Node()
		if !hasAllKeys(node, cs) {
			continue
		}
		for i := range cs {
			c := &cs[i]
			if !c.includes(pod, node, &s.required) {
				continue
			}
			s.counts[i][node.Labels[c.topologyKey]] += countMatching(ni.Pods, c.selector, pod.Namespace)
		}
	}
	for i := range cs {
		s.recomputeMin(i)
	}
	state.Write(preFilterKey, s)
	return nil, nil
}

func (s *preFilterState) update(pi *framework.PodInfo, pod *v1.Pod, node *v1.Node, delta int) {
	if pi.Pod.Namespace != pod.Namespace || node == nil || !hasAllKeys(node, s.constraints) {
		return
	}
	set := labels.Set(pi.Pod.Labels)
	for i := range s.constraints {
		c := &s.constraints[i]
		if !c.selector.Matches(set) || !c.includes(pod, node, &s.required) {
			continue
		}
		s.counts[i][node.Labels[c.topologyKey]] += delta
		s.recomputeMin(i)
	}
}

// AddPod counts a pod added to nodeInfo.
func (pl *PodTopologySpread) AddPod(_ context.Context, state *framework.CycleState, pod *v1.Pod, pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	s, err := framework.ReadAs[*preFilterState](state, preFilterKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.update(pi, pod, ni.Node(), 1)
	return nil
}

// RemovePod uncounts a pod removed from nodeInfo.
func (pl *PodTopologySpread) RemovePod(_ context.Context, state *framework.CycleState, pod *v1.Pod, pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	s, err := framework.ReadAs[*preFilterState](state, preFilterKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.update(pi, pod, ni.Node(), -1)
	return nil
}

// Filter rejects a node without a constraint's topology key
// (unresolvably), or where matching pods in its domain plus the pod itself
// (if it matches) minus the global minimum would exceed maxSkew.
func (pl *PodTopologySpread) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	s, err := framework.ReadAs[*preFilterState](state, preFilterKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	node := ni.Node()
	podLabels := labels.Set(pod.Labels)
	for i := range s.constraints {
		c := &s.constraints[i]
		v, ok := node.Labels[c.topologyKey]
		if !ok {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeLabelNotMatch)
		}
		self := 0
		if c.selector.Matches(podLabels) {
			self = 1
		}
		if s.counts[i][v]+self-s.minMatch(i) > int(c.maxSkew) {
			return framework.NewStatus(framework.Unschedulable, ErrReasonConstraintsNotMatch)
		}
	}
	return nil
}

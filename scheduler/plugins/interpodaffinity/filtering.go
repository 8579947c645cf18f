package interpodaffinity

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubebus/kubebus/scheduler/framework"
)

const preFilterKey framework.StateKey = "PreFilter" + Name

type preFilterState struct {
	// existingAntiAffinity counts, per topology domain, existing pods'
	// required anti-affinity terms the incoming pod matches.
	existingAntiAffinity topologyCounts
	// affinity counts existing pods matching all the incoming pod's
	// required affinity terms.
	affinity topologyCounts
	// antiAffinity counts existing pods matching the incoming pod's
	// required anti-affinity terms.
	antiAffinity topologyCounts
	podInfo      *framework.PodInfo
	nsLabels     labels.Set
}

func (s *preFilterState) Clone() framework.StateData {
	return &preFilterState{
		existingAntiAffinity: s.existingAntiAffinity.clone(),
		affinity:             s.affinity.clone(),
		antiAffinity:         s.antiAffinity.clone(),
		podInfo:              s.podInfo,
		nsLabels:             s.nsLabels,
	}
}

func (s *preFilterState) update(pi *framework.PodInfo, node *v1.Node, delta int64) {
	s.existingAntiAffinity.addAntiAffinity(pi.RequiredAntiAffinityTerms, s.podInfo.Pod, s.nsLabels, node, delta)
	s.affinity.addAffinity(s.podInfo.RequiredAffinityTerms, pi.Pod, node, delta)
	s.antiAffinity.addAntiAffinity(s.podInfo.RequiredAntiAffinityTerms, pi.Pod, nil, node, delta)
}

// PreFilter counts, per topology domain, the existing pods the pod's
// required terms match and the existing pods whose anti-affinity matches
// the pod. Skip when there is nothing to enforce.
func (pl *InterPodAffinity) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, snap *framework.Snapshot) (*framework.PreFilterResult, *framework.Status) {
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, "parsing pod: "+err.Error())
	}
	for i := range pi.RequiredAffinityTerms {
		mergeNamespaces(&pi.RequiredAffinityTerms[i], snap)
	}
	for i := range pi.RequiredAntiAffinityTerms {
		mergeNamespaces(&pi.RequiredAntiAffinityTerms[i], snap)
	}
	s := &preFilterState{
		existingAntiAffinity: topologyCounts{},
		affinity:             topologyCounts{},
		antiAffinity:         topologyCounts{},
		podInfo:              pi,
		nsLabels:             snap.NamespaceLabels(pod.Namespace),
	}
	for _, ni := range snap.HavePodsWithRequiredAntiAffinity() {
		for _, existing := range ni.PodsWithRequiredAntiAffinity {
			s.existingAntiAffinity.addAntiAffinity(existing.RequiredAntiAffinityTerms, pod, s.nsLabels, ni.Node(), 1)
		}
	}
	if len(pi.RequiredAffinityTerms)+len(pi.RequiredAntiAffinityTerms) > 0 {
		for _, ni := range snap.NodeInfos() {
			for _, existing := range ni.Pods {
				s.affinity.addAffinity(pi.RequiredAffinityTerms, existing.Pod, ni.Node(), 1)
				s.antiAffinity.addAntiAffinity(pi.RequiredAntiAffinityTerms, existing.Pod, nil, ni.Node(), 1)
			}
		}
	}
	if len(s.existingAntiAffinity) == 0 && len(pi.RequiredAffinityTerms) == 0 && len(pi.RequiredAntiAffinityTerms) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterKey, s)
	return nil, nil
}

// AddPod updates the counts for a pod added to nodeInfo.
func (pl *InterPodAffinity) AddPod(_ context.Context, state *framework.CycleState, _ *v1.Pod, pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	s, err := framework.ReadAs[*preFilterState](state, preFilterKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.update(pi, ni.Node(), 1)
	return nil
}

// RemovePod updates the counts for a pod removed from nodeInfo.
func (pl *InterPodAffinity) RemovePod(_ context.Context, state *framework.CycleState, _ *v1.Pod, pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	s, err := framework.ReadAs[*preFilterState](state, preFilterKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.update(pi, ni.Node(), -1)
	return nil
}

// Filter checks, in this order: the pod's required affinity
// (unresolvable if unmet), its required anti-affinity, and existing pods'
// anti-affinity against it.
func (pl *InterPodAffinity) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	s, err := framework.ReadAs[*preFilterState](state, preFilterKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	node := ni.Node()
	if !satisfiesAffinity(s, node) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
	}
	if !satisfiesAntiAffinity(s, node) {
		return framework.NewStatus(framework.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
	}
	if !satisfiesExistingAntiAffinity(s, node) {
		return framework.NewStatus(framework.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
	}
	return nil
}

// satisfiesAffinity: the node has every term's topology key, and each
// term's domain holds a matching pod. When no pod anywhere matches and the
// pod matches its own terms, the first pod of such a group may go anywhere
// that has the keys.
func satisfiesAffinity(s *preFilterState, node *v1.Node) bool {
	found := true
	for _, t := range s.podInfo.RequiredAffinityTerms {
		v, ok := node.Labels[t.TopologyKey]
		if !ok {
			return false
		}
		if s.affinity[topologyPair{t.TopologyKey, v}] <= 0 {
			found = false
		}
	}
	if found {
		return true
	}
	return len(s.affinity) == 0 && matchesAll(s.podInfo.RequiredAffinityTerms, s.podInfo.Pod)
}

func satisfiesAntiAffinity(s *preFilterState, node *v1.Node) bool {
	if len(s.antiAffinity) == 0 {
		return true
	}
	for _, t := range s.podInfo.RequiredAntiAffinityTerms {
		if v, ok := node.Labels[t.TopologyKey]; ok && s.antiAffinity[topologyPair{t.TopologyKey, v}] > 0 {
			return false
		}
	}
	return true
}

func satisfiesExistingAntiAffinity(s *preFilterState, node *v1.Node) bool {
	if len(s.existingAntiAffinity) == 0 {
		return true
	}
	for k, v := range node.Labels {
		if s.existingAntiAffinity[topologyPair{k, v}] > 0 {
			return false
		}
	}
	return true
}

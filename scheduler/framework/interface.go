package framework

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

const (
	// MaxNodeScore is the highest score a Score plugin may give after
	// normalization.
	MaxNodeScore int64 = 100
	// MinNodeScore is the lowest.
	MinNodeScore int64 = 0
)

// Plugin is what every plugin is: something with a name, unique in a
// profile and used in configuration.
type Plugin interface {
	Name() string
}

// PreFilterPlugin runs once per cycle before any Filter. It precomputes
// what its Filter needs into the CycleState, may narrow the candidate nodes
// (a non-nil *PreFilterResult), may reject the pod outright
// (Unschedulable…), or return Skip when its Filter has nothing to check for
// this pod.
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, pod *v1.Pod, snap *Snapshot) (*PreFilterResult, *Status)
}

// PreFilterExtensions is implemented by PreFilter plugins whose precomputed
// state depends on the pods on other nodes (inter-pod affinity, topology
// spread). Preemption and nominated pods call AddPod and RemovePod to
// update that state when they simulate adding or removing a pod on
// nodeInfo; nodeInfo already reflects the change.
type PreFilterExtensions interface {
	AddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podToAdd *PodInfo, nodeInfo *NodeInfo) *Status
	RemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podToRemove *PodInfo, nodeInfo *NodeInfo) *Status
}

// FilterPlugin decides whether the pod can run on one node. It may be
// called concurrently for different nodes, so it must only read state and
// nodeInfo.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status
}

// PreScorePlugin runs once per cycle with the nodes that passed the
// filters, before any Score. Skip means its Score has nothing to add for
// this pod.
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, pod *v1.Pod, snap *Snapshot, nodes []*NodeInfo) *Status
}

// ScorePlugin ranks one feasible node. Raw scores may have any range when
// the plugin also implements ScoreNormalizer; otherwise they must be in
// [MinNodeScore, MaxNodeScore]. It may be called concurrently for
// different nodes.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) (int64, *Status)
}

// ScoreNormalizer is implemented by Score plugins that rescale their raw
// scores, in place, to [MinNodeScore, MaxNodeScore] once every node has a
// score.
type ScoreNormalizer interface {
	NormalizeScore(ctx context.Context, state *CycleState, pod *v1.Pod, scores NodeScoreList) *Status
}

// NodeScore is one node's score.
type NodeScore struct {
	Name  string
	Score int64
}

// NodeScoreList is the scores of the feasible nodes, in evaluation order.
type NodeScoreList []NodeScore

// PreFilterResult narrows the nodes a pod is evaluated on. A nil result or
// a nil NodeNames means all nodes.
type PreFilterResult struct {
	NodeNames sets.Set[string]
}

// AllNodes reports whether the result leaves every node eligible.
func (r *PreFilterResult) AllNodes() bool {
	return r == nil || r.NodeNames == nil
}

// Merge intersects two results.
func (r *PreFilterResult) Merge(in *PreFilterResult) *PreFilterResult {
	if r.AllNodes() && in.AllNodes() {
		return nil
	}
	if r.AllNodes() {
		return &PreFilterResult{NodeNames: in.NodeNames.Clone()}
	}
	if in.AllNodes() {
		return &PreFilterResult{NodeNames: r.NodeNames.Clone()}
	}
	return &PreFilterResult{NodeNames: r.NodeNames.Intersection(in.NodeNames)}
}

// DefaultNormalizeScore scales scores so the highest becomes maxPriority
// (and, with reverse, the highest becomes 0 and a zero becomes
// maxPriority). All-zero scores stay zero, or become maxPriority with
// reverse.
func DefaultNormalizeScore(maxPriority int64, reverse bool, scores NodeScoreList) *Status {
	var maxCount int64
	for i := range scores {
		maxCount = max(maxCount, scores[i].Score)
	}
	if maxCount == 0 {
		if reverse {
			for i := range scores {
				scores[i].Score = maxPriority
			}
		}
		return nil
	}
	for i := range scores {
		s := maxPriority * scores[i].Score / maxCount
		if reverse {
			s = maxPriority - s
		}
		scores[i].Score = s
	}
	return nil
}

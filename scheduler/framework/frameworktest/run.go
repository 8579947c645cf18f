package frameworktest

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
)

// Filter runs pl on one node of snap as a cycle would: its PreFilter first
// if it has one (Skip means the node passes), then its Filter. A PreFilter
// rejection is returned as is.
func Filter(ctx context.Context, pl framework.Plugin, snap *framework.Snapshot, pod *v1.Pod, node string) *framework.Status {
	state := framework.NewCycleState()
	if pf, ok := pl.(framework.PreFilterPlugin); ok {
		r, s := pf.PreFilter(ctx, state, pod, snap)
		if s.IsSkip() {
			return nil
		}
		if !s.IsSuccess() {
			return s
		}
		if !r.AllNodes() && !r.NodeNames.Has(node) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, "excluded by PreFilterResult")
		}
	}
	ni := snap.Get(node)
	if ni == nil {
		return framework.AsStatus(fmt.Errorf("node %q not in snapshot", node))
	}
	return pl.(framework.FilterPlugin).Filter(ctx, state, pod, ni)
}

// Score runs pl over every node of snap as a cycle would (PreScore, Score,
// NormalizeScore) and returns the normalized scores by node name. A
// PreScore Skip gives every node 0.
func Score(ctx context.Context, pl framework.Plugin, snap *framework.Snapshot, pod *v1.Pod) (map[string]int64, *framework.Status) {
	state := framework.NewCycleState()
	nodes := snap.NodeInfos()
	out := make(map[string]int64, len(nodes))
	if ps, ok := pl.(framework.PreScorePlugin); ok {
		s := ps.PreScore(ctx, state, pod, snap, nodes)
		if s.IsSkip() {
			for _, n := range nodes {
				out[n.Name()] = 0
			}
			return out, nil
		}
		if !s.IsSuccess() {
			return nil, s
		}
	}
	scores := make(framework.NodeScoreList, len(nodes))
	for i, n := range nodes {
		v, s := pl.(framework.ScorePlugin).Score(ctx, state, pod, n)
		if !s.IsSuccess() {
			return nil, s
		}
		scores[i] = framework.NodeScore{Name: n.Name(), Score: v}
	}
	if n, ok := pl.(framework.ScoreNormalizer); ok {
		if s := n.NormalizeScore(ctx, state, pod, scores); !s.IsSuccess() {
			return nil, s
		}
	}
	for _, s := range scores {
		out[s.Name] = s.Score
	}
	return out, nil
}

// Snapshot builds a snapshot from wrappers' objects.
func Snapshot(nodes []*v1.Node, pods ...*v1.Pod) *framework.Snapshot {
	return framework.NewSnapshot(nodes, pods, nil)
}

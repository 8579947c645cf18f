// Package balancedallocation is NodeResourcesBalancedAllocation: it
// favours nodes whose resources would be used evenly (cpu and memory by
// default) with the pod on them.
package balancedallocation

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
	"github.com/kubebus/kubebus/scheduler/plugins/noderesources"
)

// Name is the plugin's name in configuration.
const Name = "NodeResourcesBalancedAllocation"

const preScoreKey framework.StateKey = "PreScore" + Name

// Args are the plugin's arguments (NodeResourcesBalancedAllocationArgs).
type Args struct {
	Resources []noderesources.ResourceSpec `json:"resources,omitempty"`
}

// BalancedAllocation is the plugin.
type BalancedAllocation struct {
	resources []noderesources.ResourceSpec
}

var (
	_ framework.PreScorePlugin = (*BalancedAllocation)(nil)
	_ framework.ScorePlugin    = (*BalancedAllocation)(nil)
)

// New returns the plugin; resources default to cpu and memory.
func New(args Args) (*BalancedAllocation, error) {
	if len(args.Resources) == 0 {
		args.Resources = noderesources.DefaultResources()
	}
	noderesources.DefaultWeights(args.Resources)
	if err := noderesources.ValidateResources("resources", args.Resources); err != nil {
		return nil, fmt.Errorf("%s args: %w", Name, err)
	}
	return &BalancedAllocation{resources: args.Resources}, nil
}

// Name returns Name.
func (*BalancedAllocation) Name() string { return Name }

type preScoreState struct{ podRequests []int64 }

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore computes the pod's requests; Skip for a pod that requests none
// of the resources (it cannot unbalance a node).
func (b *BalancedAllocation) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ *framework.Snapshot, _ []*framework.NodeInfo) *framework.Status {
	req := noderesources.PodRequestsFor(pod, b.resources, true)
	for _, r := range req {
		if r != 0 {
			state.Write(preScoreKey, &preScoreState{req})
			return nil
		}
	}
	return framework.NewStatus(framework.Skip)
}

// Score is 100 × (1 − the standard deviation of the resources' requested
// fractions), each fraction capped at 1.
func (b *BalancedAllocation) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	s, err := framework.ReadAs[*preScoreState](state, preScoreKey)
	if err != nil {
		s = &preScoreState{noderesources.PodRequestsFor(pod, b.resources, true)}
	}
	var reqBuf, allocBuf [4]int64
	requested, allocatable := reqBuf[:0], allocBuf[:0]
	for range b.resources {
		requested, allocatable = append(requested, 0), append(allocatable, 0)
	}
	noderesources.Requested(ni, b.resources, s.podRequests, true, requested, allocatable)
	return balancedScore(requested, allocatable), nil
}

func balancedScore(requested, allocatable []int64) int64 {
	var fractions [4]float64
	list := fractions[:0]
	var total float64
	for i := range requested {
		if allocatable[i] == 0 {
			continue
		}
		f := min(float64(requested[i])/float64(allocatable[i]), 1)
		total += f
		list = append(list, f)
	}
	var std float64
	switch {
	case len(list) == 2:
		std = math.Abs((list[0] - list[1]) / 2)
	case len(list) > 2:
		mean := total / float64(len(list))
		var sum float64
		for _, f := range list {
			sum += (f - mean) * (f - mean)
		}
		std = math.Sqrt(sum / float64(len(list)))
	}
	return int64((1 - std) * float64(framework.MaxNodeScore))
}

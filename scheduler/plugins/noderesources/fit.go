// Package noderesources is NodeResourcesFit: it filters out nodes without
// room for the pod's requests (cpu, memory, ephemeral-storage, pod count,
// extended resources) and scores nodes by how allocated they would be
// (LeastAllocated by default, MostAllocated or RequestedToCapacityRatio by
// configuration). The helpers for resource scoring are shared with
// NodeResourcesBalancedAllocation.
package noderesources

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubebus/kubebus/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "NodeResourcesFit"

const (
	preFilterKey framework.StateKey = "PreFilter" + Name
	preScoreKey  framework.StateKey = "PreScore" + Name
)

// Fit is the plugin.
type Fit struct {
	ignored, ignoredGroups sets.Set[string]
	resources              []ResourceSpec
	useRequested           bool
	strategy               ScoringStrategyType
	shape                  []UtilizationShapePoint
}

var (
	_ framework.PreFilterPlugin = (*Fit)(nil)
	_ framework.FilterPlugin    = (*Fit)(nil)
	_ framework.PreScorePlugin  = (*Fit)(nil)
	_ framework.ScorePlugin     = (*Fit)(nil)
)

// New returns the plugin; args are defaulted and validated.
func New(args FitArgs) (*Fit, error) {
	args.Default()
	if err := args.Validate(); err != nil {
		return nil, fmt.Errorf("%s args: %w", Name, err)
	}
	s := args.ScoringStrategy
	f := &Fit{
		ignored:       sets.New(args.IgnoredResources...),
		ignoredGroups: sets.New(args.IgnoredResourceGroups...),
		resources:     s.Resources,
	}
	f.strategy = s.Type
	if s.Type == RequestedToCapacityRatio {
		f.useRequested = true
		f.shape = s.RequestedToCapacityRatio.Shape
	}
	return f, nil
}

// Name returns Name.
func (*Fit) Name() string { return Name }

type preFilterState struct{ framework.Resource }

func (s *preFilterState) Clone() framework.StateData { return s }

// PreFilter computes the pod's requests (see framework.PodRequests).
func (*Fit) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ *framework.Snapshot) (*framework.PreFilterResult, *framework.Status) {
	state.Write(preFilterKey, &preFilterState{framework.PodRequests(pod, false)})
	return nil, nil
}

// InsufficientResource describes one resource a node lacks.
type InsufficientResource struct {
	Name      v1.ResourceName
	Reason    string
	Requested int64
	Used      int64
	Capacity  int64
	// Unresolvable: the pod asks for more than the node's whole
	// allocatable, so no preemption can help.
	Unresolvable bool
}

// Filter rejects the node if any requested resource does not fit in what
// is left of its allocatable, with one reason per resource. A request of
// zero always fits; the pod count is always checked. The code is
// UnschedulableAndUnresolvable when a request exceeds the node's whole
// allocatable.
func (f *Fit) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	s, err := framework.ReadAs[*preFilterState](state, preFilterKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	insufficient := f.Fits(&s.Resource, ni)
	if len(insufficient) == 0 {
		return nil
	}
	code := framework.Unschedulable
	reasons := make([]string, len(insufficient))
	for i, r := range insufficient {
		reasons[i] = r.Reason
		if r.Unresolvable {
			code = framework.UnschedulableAndUnresolvable
		}
	}
	return framework.NewStatus(code, reasons...)
}

// Fits lists what the node lacks for requests (none when it fits).
// Extended resources are checked in name order.
func (f *Fit) Fits(req *framework.Resource, ni *framework.NodeInfo) []InsufficientResource {
	var out []InsufficientResource
	alloc, used := &ni.Allocatable, &ni.Requested
	if len(ni.Pods)+1 > alloc.AllowedPodNumber {
		out = append(out, InsufficientResource{Name: v1.ResourcePods, Reason: "Too many pods",
			Requested: 1, Used: int64(len(ni.Pods)), Capacity: int64(alloc.AllowedPodNumber)})
	}
	if req.IsZero() {
		return out
	}
	check := func(name v1.ResourceName, reason string, want, have, capacity int64) {
		if want > 0 && want > capacity-have {
			out = append(out, InsufficientResource{Name: name, Reason: reason, Requested: want, Used: have,
				Capacity: capacity, Unresolvable: want > capacity})
		}
	}
	check(v1.ResourceCPU, "Insufficient cpu", req.MilliCPU, used.MilliCPU, alloc.MilliCPU)
	check(v1.ResourceMemory, "Insufficient memory", req.Memory, used.Memory, alloc.Memory)
	check(v1.ResourceEphemeralStorage, "Insufficient ephemeral-storage", req.EphemeralStorage, used.EphemeralStorage, alloc.EphemeralStorage)
	if len(req.ScalarResources) == 0 {
		return out
	}
	names := make([]v1.ResourceName, 0, len(req.ScalarResources))
	for name, n := range req.ScalarResources {
		if n != 0 {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	for _, name := range names {
		if framework.IsExtendedResourceName(name) {
			group, _, _ := strings.Cut(string(name), "/")
			if f.ignored.Has(string(name)) || f.ignoredGroups.Has(group) {
				continue
			}
		}
		check(name, "Insufficient "+string(name), req.ScalarResources[name], used.ScalarResources[name], alloc.ScalarResources[name])
	}
	return out
}

type preScoreState struct{ podRequests []int64 }

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore computes the pod's requests of the scored resources.
func (f *Fit) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ *framework.Snapshot, _ []*framework.NodeInfo) *framework.Status {
	state.Write(preScoreKey, &preScoreState{PodRequestsFor(pod, f.resources, f.useRequested)})
	return nil
}

// Score rates the node by the configured strategy, in [0, 100].
func (f *Fit) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	s, err := framework.ReadAs[*preScoreState](state, preScoreKey)
	if err != nil {
		s = &preScoreState{PodRequestsFor(pod, f.resources, f.useRequested)}
	}
	var reqBuf, allocBuf [4]int64
	requested, allocatable := reqBuf[:0], allocBuf[:0]
	for range f.resources {
		requested, allocatable = append(requested, 0), append(allocatable, 0)
	}
	Requested(ni, f.resources, s.podRequests, f.useRequested, requested, allocatable)
	switch f.strategy {
	case MostAllocated:
		return weightedMean(f.resources, requested, allocatable, mostRequested), nil
	case RequestedToCapacityRatio:
		return requestedToCapacityRatio(f.resources, f.shape, requested, allocatable), nil
	default:
		return weightedMean(f.resources, requested, allocatable, leastRequested), nil
	}
}

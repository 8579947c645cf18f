package noderesources

import (
	"math"

	v1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
)

// PodRequestsFor returns what the pod requests of each resource, for
// scoring: with useRequested false, containers without a cpu or memory
// request count the scheduler's defaults (100m, 200Mi).
func PodRequestsFor(pod *v1.Pod, resources []ResourceSpec, useRequested bool) []int64 {
	r := framework.PodRequests(pod, !useRequested)
	out := make([]int64, len(resources))
	for i := range resources {
		out[i] = r.Get(v1.ResourceName(resources[i].Name))
	}
	return out
}

// AllocatableRequested returns a node's allocatable amount of a resource
// and what would be requested with the pod on it. It returns (0, 0), which
// scorers skip, for a scalar resource the pod does not request or the node
// does not have.
func AllocatableRequested(ni *framework.NodeInfo, name v1.ResourceName, podRequest int64, useRequested bool) (int64, int64) {
	requested := &ni.NonZeroRequested
	if useRequested {
		requested = &ni.Requested
	}
	switch name {
	case v1.ResourceCPU:
		return ni.Allocatable.MilliCPU, requested.MilliCPU + podRequest
	case v1.ResourceMemory:
		return ni.Allocatable.Memory, requested.Memory + podRequest
	case v1.ResourceEphemeralStorage:
		return ni.Allocatable.EphemeralStorage, ni.Requested.EphemeralStorage + podRequest
	}
	if podRequest == 0 && framework.IsScalarResourceName(name) {
		return 0, 0
	}
	if alloc, ok := ni.Allocatable.ScalarResources[name]; ok {
		return alloc, ni.Requested.ScalarResources[name] + podRequest
	}
	return 0, 0
}

// Requested fills requested and allocatable for each resource.
func Requested(ni *framework.NodeInfo, resources []ResourceSpec, podRequests []int64, useRequested bool, requested, allocatable []int64) {
	for i := range resources {
		a, r := AllocatableRequested(ni, v1.ResourceName(resources[i].Name), podRequests[i], useRequested)
		if a == 0 {
			requested[i], allocatable[i] = 0, 0
			continue
		}
		requested[i], allocatable[i] = r, a
	}
}

// weightedMean averages per(requested, capacity) over the resources the
// node has, by weight.
func weightedMean(resources []ResourceSpec, requested, allocatable []int64, per func(requested, capacity int64) int64) int64 {
	var score, weights int64
	for i := range requested {
		if allocatable[i] == 0 {
			continue
		}
		score += per(requested[i], allocatable[i]) * resources[i].Weight
		weights += resources[i].Weight
	}
	if weights == 0 {
		return 0
	}
	return score / weights
}

// leastRequested is (capacity-requested)/capacity on [0, 100].
func leastRequested(requested, capacity int64) int64 {
	if capacity == 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * framework.MaxNodeScore / capacity
}

// mostRequested is requested/capacity on [0, 100].
func mostRequested(requested, capacity int64) int64 {
	if capacity == 0 {
		return 0
	}
	requested = min(requested, capacity)
	return requested * framework.MaxNodeScore / capacity
}

// requestedToCapacityRatio scores utilization with a broken-line function
// through the shape points (scores scaled from 0-10 to 0-100), averaging
// over the resources with a positive score.
func requestedToCapacityRatio(resources []ResourceSpec, shape []UtilizationShapePoint, requested, allocatable []int64) int64 {
	const maxUtilization = 100
	f := func(p int64) int64 {
		for i := range shape {
			if p <= int64(shape[i].Utilization) {
				if i == 0 {
					return int64(shape[0].Score) * 10
				}
				u0, s0 := int64(shape[i-1].Utilization), int64(shape[i-1].Score)*10
				u1, s1 := int64(shape[i].Utilization), int64(shape[i].Score)*10
				return s0 + (s1-s0)*(p-u0)/(u1-u0)
			}
		}
		return int64(shape[len(shape)-1].Score) * 10
	}
	var score, weights int64
	for i := range requested {
		if allocatable[i] == 0 {
			continue
		}
		var s int64
		if requested[i] > allocatable[i] {
			s = f(maxUtilization)
		} else {
			s = f(requested[i] * maxUtilization / allocatable[i])
		}
		if s > 0 {
			score += s * resources[i].Weight
			weights += resources[i].Weight
		}
	}
	if weights == 0 {
		return 0
	}
	return int64(math.Round(float64(score) / float64(weights)))
}

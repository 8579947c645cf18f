// Package nodeports filters out nodes where a host port the pod asks for is
// already bound.
package nodeports

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "NodePorts"

// ErrReason is the reason for a node with a clashing port.
const ErrReason = "node(s) didn't have free ports for the requested pod ports"

const preFilterKey framework.StateKey = "PreFilter" + Name

// NodePorts is the plugin.
type NodePorts struct{}

var (
	_ framework.PreFilterPlugin = (*NodePorts)(nil)
	_ framework.FilterPlugin    = (*NodePorts)(nil)
)

// New returns the plugin.
func New() *NodePorts { return &NodePorts{} }

// Name returns Name.
func (*NodePorts) Name() string { return Name }

type preFilterState []v1.ContainerPort

func (s preFilterState) Clone() framework.StateData { return s }

// PreFilter collects the pod's host ports; Skip if it has none.
func (*NodePorts) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ *framework.Snapshot) (*framework.PreFilterResult, *framework.Status) {
	var ports preFilterState
	framework.ForEachHostPort(pod, func(p v1.ContainerPort) { ports = append(ports, p) })
	if len(ports) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterKey, ports)
	return nil, nil
}

// Filter rejects the node if any of the pod's host ports clashes with one
// in use there (same protocol and port, on the same IP or where either side
// binds 0.0.0.0). Preemption may free the port, so the code is
// Unschedulable.
func (*NodePorts) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	ports, err := framework.ReadAs[preFilterState](state, preFilterKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	for _, p := range ports {
		if ni.UsedPorts.CheckConflict(p.HostIP, string(p.Protocol), p.HostPort) {
			return framework.NewStatus(framework.Unschedulable, ErrReason)
		}
	}
	return nil
}

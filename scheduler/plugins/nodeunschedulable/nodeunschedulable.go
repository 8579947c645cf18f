// Package nodeunschedulable filters out nodes marked spec.unschedulable
// (cordoned), unless the pod tolerates the node.kubernetes.io/unschedulable
// NoSchedule taint.
package nodeunschedulable

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "NodeUnschedulable"

// ErrReasonUnschedulable is the reason for a cordoned node.
const ErrReasonUnschedulable = "node(s) were unschedulable"

// NodeUnschedulable is the plugin.
type NodeUnschedulable struct{}

var _ framework.FilterPlugin = (*NodeUnschedulable)(nil)

// New returns the plugin.
func New() *NodeUnschedulable { return &NodeUnschedulable{} }

// Name returns Name.
func (*NodeUnschedulable) Name() string { return Name }

var unschedulableTaint = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// Filter rejects a cordoned node, unresolvably (preemption cannot help).
func (*NodeUnschedulable) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	if !ni.Node().Spec.Unschedulable {
		return nil
	}
	if framework.TolerationsTolerateTaint(pod.Spec.Tolerations, &unschedulableTaint) {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnschedulable)
}

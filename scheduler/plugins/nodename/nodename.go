// Package nodename filters out every node but the one a pod names in
// spec.nodeName, when it names one.
package nodename

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "NodeName"

// ErrReason is the reason for any other node.
const ErrReason = "node(s) didn't match the requested node name"

// NodeName is the plugin.
type NodeName struct{}

var _ framework.FilterPlugin = (*NodeName)(nil)

// New returns the plugin.
func New() *NodeName { return &NodeName{} }

// Name returns Name.
func (*NodeName) Name() string { return Name }

// Filter rejects the node, unresolvably, if the pod names another.
func (*NodeName) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	if pod.Spec.NodeName == "" || pod.Spec.NodeName == ni.Node().Name {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
}

// Package tainttoleration filters out nodes with a NoSchedule or NoExecute
// taint the pod does not tolerate, and scores nodes lower the more
// PreferNoSchedule taints the pod does not tolerate.
package tainttoleration

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "TaintToleration"

const preScoreKey framework.StateKey = "PreScore" + Name

// TaintToleration is the plugin.
type TaintToleration struct{}

var (
	_ framework.FilterPlugin    = (*TaintToleration)(nil)
	_ framework.PreScorePlugin  = (*TaintToleration)(nil)
	_ framework.ScorePlugin     = (*TaintToleration)(nil)
	_ framework.ScoreNormalizer = (*TaintToleration)(nil)
)

// New returns the plugin.
func New() *TaintToleration { return &TaintToleration{} }

// Name returns Name.
func (*TaintToleration) Name() string { return Name }

// Filter rejects the node, unresolvably, if it has an untolerated
// NoSchedule or NoExecute taint; the reason names the first such taint.
func (*TaintToleration) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	taint, ok := framework.FindUntoleratedTaint(ni.Node().Spec.Taints, pod.Spec.Tolerations, framework.DoNotScheduleTaint)
	if !ok {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable,
		fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value))
}

type preScoreState struct {
	tolerations []v1.Toleration // those with effect PreferNoSchedule or none
}

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore keeps the tolerations that can tolerate PreferNoSchedule taints.
func (*TaintToleration) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ *framework.Snapshot, _ []*framework.NodeInfo) *framework.Status {
	s := &preScoreState{}
	for _, t := range pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			s.tolerations = append(s.tolerations, t)
		}
	}
	state.Write(preScoreKey, s)
	return nil
}

// Score counts the node's untolerated PreferNoSchedule taints.
func (*TaintToleration) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	s, err := framework.ReadAs[*preScoreState](state, preScoreKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	var n int64
	for i := range ni.Node().Spec.Taints {
		t := &ni.Node().Spec.Taints[i]
		if t.Effect == v1.TaintEffectPreferNoSchedule && !framework.TolerationsTolerateTaint(s.tolerations, t) {
			n++
		}
	}
	return n, nil
}

// NormalizeScore reverses the counts onto [0, 100]: no untolerated taint
// scores 100, the most scores 0.
func (*TaintToleration) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	return framework.DefaultNormalizeScore(framework.MaxNodeScore, true, scores)
}

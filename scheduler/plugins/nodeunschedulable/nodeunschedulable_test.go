package nodeunschedulable

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
)

func TestFilter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		node *v1.Node
		pod  *v1.Pod
		want framework.Code
	}{
		{"schedulable node", ft.MakeNode("n").Obj(), ft.MakePod("p").Obj(), framework.Success},
		{"cordoned node", ft.MakeNode("n").Unschedulable().Obj(), ft.MakePod("p").Obj(), framework.UnschedulableAndUnresolvable},
		{"cordoned node, pod tolerates the unschedulable taint",
			ft.MakeNode("n").Unschedulable().Obj(),
			ft.MakePod("p").Toleration(v1.TaintNodeUnschedulable, v1.TolerationOpExists, "", v1.TaintEffectNoSchedule).Obj(),
			framework.Success},
		{"cordoned node, toleration for another effect",
			ft.MakeNode("n").Unschedulable().Obj(),
			ft.MakePod("p").Toleration(v1.TaintNodeUnschedulable, v1.TolerationOpExists, "", v1.TaintEffectNoExecute).Obj(),
			framework.UnschedulableAndUnresolvable},
		{"cordoned node, tolerate everything",
			ft.MakeNode("n").Unschedulable().Obj(),
			ft.MakePod("p").Toleration("", v1.TolerationOpExists, "", "").Obj(),
			framework.Success},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			snap := ft.Snapshot([]*v1.Node{tt.node})
			s := ft.Filter(context.Background(), New(), snap, tt.pod, "n")
			if s.Code() != tt.want {
				t.Fatalf("got %v, want %v", s, tt.want)
			}
			if tt.want != framework.Success && s.Message() != ErrReasonUnschedulable {
				t.Errorf("message %q", s.Message())
			}
		})
	}
}

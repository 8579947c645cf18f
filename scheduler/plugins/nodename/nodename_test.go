package nodename

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
		name     string
		nodeName string
		want     framework.Code
	}{
		{"no node name", "", framework.Success},
		{"same node", "n1", framework.Success},
		{"other node", "n2", framework.UnschedulableAndUnresolvable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			snap := ft.Snapshot([]*v1.Node{ft.MakeNode("n1").Obj()})
			pod := ft.MakePod("p").Obj()
			pod.Spec.NodeName = tt.nodeName
			s := ft.Filter(context.Background(), New(), snap, pod, "n1")
			if s.Code() != tt.want {
				t.Fatalf("got %v, want %v", s, tt.want)
			}
			if tt.want != framework.Success && s.Message() != ErrReason {
				t.Errorf("message %q", s.Message())
			}
		})
	}
}

package nodeports

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
)

func TestFilter(t *testing.T) {
	t.Parallel()
	tcp, udp := v1.ProtocolTCP, v1.ProtocolUDP
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		want     framework.Code
	}{
		{"no host ports", ft.MakePod("p").Obj(), []*v1.Pod{ft.MakePod("e").HostPort("", tcp, 80).Obj()}, framework.Success},
		{"free port", ft.MakePod("p").HostPort("", tcp, 8080).Obj(), []*v1.Pod{ft.MakePod("e").HostPort("", tcp, 80).Obj()}, framework.Success},
		{"same port and protocol", ft.MakePod("p").HostPort("", tcp, 80).Obj(), []*v1.Pod{ft.MakePod("e").HostPort("", tcp, 80).Obj()}, framework.Unschedulable},
		{"empty protocol is TCP", ft.MakePod("p").HostPort("", "", 80).Obj(), []*v1.Pod{ft.MakePod("e").HostPort("", tcp, 80).Obj()}, framework.Unschedulable},
		{"other protocol", ft.MakePod("p").HostPort("", udp, 80).Obj(), []*v1.Pod{ft.MakePod("e").HostPort("", tcp, 80).Obj()}, framework.Success},
		{"different specific IPs", ft.MakePod("p").HostPort("10.0.0.1", tcp, 80).Obj(), []*v1.Pod{ft.MakePod("e").HostPort("10.0.0.2", tcp, 80).Obj()}, framework.Success},
		{"same specific IP", ft.MakePod("p").HostPort("10.0.0.1", tcp, 80).Obj(), []*v1.Pod{ft.MakePod("e").HostPort("10.0.0.1", tcp, 80).Obj()}, framework.Unschedulable},
		{"specific IP against 0.0.0.0", ft.MakePod("p").HostPort("10.0.0.1", tcp, 80).Obj(), []*v1.Pod{ft.MakePod("e").HostPort("0.0.0.0", tcp, 80).Obj()}, framework.Unschedulable},
		{"0.0.0.0 against a specific IP", ft.MakePod("p").HostPort("", tcp, 80).Obj(), []*v1.Pod{ft.MakePod("e").HostPort("10.0.0.2", tcp, 80).Obj()}, framework.Unschedulable},
		{"container port without host port", ft.MakePod("p").Obj(), nil, framework.Success},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, e := range tt.existing {
				e.Spec.NodeName = "n"
			}
			snap := ft.Snapshot([]*v1.Node{ft.MakeNode("n").Obj()}, tt.existing...)
			s := ft.Filter(context.Background(), New(), snap, tt.pod, "n")
			if s.Code() != tt.want {
				t.Fatalf("got %v, want %v", s, tt.want)
			}
			if tt.want != framework.Success && s.Message() != ErrReason {
				t.Errorf("message %q", s.Message())
			}
		})
	}
}

func TestPortsFreedWhenPodRemoved(t *testing.T) {
	t.Parallel()
	e := ft.MakePod("e").Node("n").HostPort("", v1.ProtocolTCP, 80).Obj()
	snap := ft.Snapshot([]*v1.Node{ft.MakeNode("n").Obj()}, e)
	pod := ft.MakePod("p").HostPort("", v1.ProtocolTCP, 80).Obj()
	if s := ft.Filter(context.Background(), New(), snap, pod, "n"); s.Code() != framework.Unschedulable {
		t.Fatalf("before removal: %v", s)
	}
	snap.RemovePod(e)
	if s := ft.Filter(context.Background(), New(), snap, pod, "n"); !s.IsSuccess() {
		t.Fatalf("after removal: %v", s)
	}
}

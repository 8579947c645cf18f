package lifecycle

import (
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(mut func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}}
	if mut != nil {
		mut(p)
	}
	return p
}

func TestPodReached(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want []Step
	}{
		{"new", pod(nil), []Step{Created}},
		{"bound", pod(func(p *corev1.Pod) { p.Spec.NodeName = "n1" }), []Step{Created, Scheduled}},
		{"sandbox by condition", pod(func(p *corev1.Pod) {
			p.Spec.NodeName = "n1"
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue}}
		}), []Step{Created, Scheduled, Sandbox}},
		{"sandbox by IP", pod(func(p *corev1.Pod) { p.Spec.NodeName = "n1"; p.Status.PodIP = "10.0.0.1" }), []Step{Created, Scheduled, Sandbox}},
		{"one of two containers", pod(func(p *corev1.Pod) {
			p.Spec.NodeName, p.Status.PodIP = "n1", "10.0.0.1"
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "a", State: running}}
		}), []Step{Created, Scheduled, Sandbox}},
		{"both started", pod(func(p *corev1.Pod) {
			p.Spec.NodeName, p.Status.PodIP = "n1", "10.0.0.1"
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "a", State: running},
				{Name: "b", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{StartedAt: metav1.Now()}}}}
		}), []Step{Created, Scheduled, Sandbox, Started}},
		{"crash looping counts as started", pod(func(p *corev1.Pod) {
			p.Spec.NodeName, p.Status.PodIP = "n1", "10.0.0.1"
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "a", State: running},
				{Name: "b", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}
		}), []Step{Created, Scheduled, Sandbox, Started}},
		{"ready implies the rest", pod(func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}), PodSteps},
		{"ready false", pod(func(p *corev1.Pod) {
			p.Spec.NodeName = "n1"
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
		}), []Step{Created, Scheduled}},
	}
	for _, c := range cases {
		if got := PodReached(c.pod); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	if PodReached(nil) != nil {
		t.Error("nil pod reached steps")
	}
}

func TestReadyPods(t *testing.T) {
	f, tr := false, true
	s := &discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{
		{TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "a"}, Conditions: discoveryv1.EndpointConditions{Ready: &tr}},
		{TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "b"}, Conditions: discoveryv1.EndpointConditions{Ready: &f}},
		{TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "c"}}, // nil ready reads as ready
		{TargetRef: &corev1.ObjectReference{Kind: "Node", Name: "d"}},
		{Addresses: []string{"10.0.0.9"}},
	}}
	if got := ReadyPods(s); !reflect.DeepEqual(got, []string{"a", "c"}) {
		t.Errorf("got %v", got)
	}
}

func TestProgrammedRoundTrip(t *testing.T) {
	l := &coordinationv1.Lease{}
	if _, _, ok := ReadProgrammed(l); ok {
		t.Fatal("an empty lease has a programmed revision")
	}
	at := time.Date(2026, 11, 25, 10, 0, 0, 123456789, time.UTC)
	SetProgrammed(l, 42, at)
	rev, got, ok := ReadProgrammed(l)
	if !ok || rev != 42 || !got.Equal(at) {
		t.Fatalf("got %d %v %v", rev, got, ok)
	}
	l.Annotations[ProgrammedRevisionAnnotation] = "x"
	if _, _, ok := ReadProgrammed(l); ok {
		t.Fatal("a bad revision was read")
	}
	if n, ok := ProxyNode(ProxyLeaseNamespace, ProxyLeaseName("node-1")); !ok || n != "node-1" {
		t.Fatalf("ProxyNode: %q %v", n, ok)
	}
	for _, c := range [][2]string{{"default", "kube-proxy-x"}, {ProxyLeaseNamespace, "node-1"}, {ProxyLeaseNamespace, "kube-proxy-"}} {
		if _, ok := ProxyNode(c[0], c[1]); ok {
			t.Errorf("ProxyNode(%q, %q) is a proxy lease", c[0], c[1])
		}
	}
}

func TestTimes(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tm := Times{}
	if got := tm.Observe([]Step{Created}, t0); !reflect.DeepEqual(got, []Step{Created}) {
		t.Fatalf("observe 1: %v", got)
	}
	if got := tm.Observe([]Step{Created, Scheduled, Sandbox}, t0.Add(2*time.Second)); !reflect.DeepEqual(got, []Step{Scheduled, Sandbox}) {
		t.Fatalf("observe 2: %v", got)
	}
	tm.Observe([]Step{Created, Scheduled, Sandbox, Started, Ready}, t0.Add(5*time.Second))
	tm.Observe([]Step{InEndpoints}, t0.Add(6*time.Second))
	var sum time.Duration
	iv := tm.Intervals()
	for _, i := range iv {
		sum += i.Duration
	}
	if len(iv) != 5 || sum != 6*time.Second || iv[0] != (Interval{Created, Scheduled, 2 * time.Second}) || iv[1].Duration != 0 {
		t.Fatalf("intervals %v (sum %v)", iv, sum)
	}
	if Index(Programmed) != 6 || Index("x") != -1 {
		t.Fatal("Index")
	}
}

package simulate

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestPlan(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "hollow-1"}, Spec: corev1.NodeSpec{PodCIDR: "10.244.3.0/24"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.1.0.3"}}}}
	pod := func(mut func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1", UID: "uid-1"},
			Spec: corev1.PodSpec{NodeName: "hollow-1", InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
				Containers: []corev1.Container{{Name: "app", Image: "busybox"}, {Name: "side", Image: "proxy"}}}}
		if mut != nil {
			mut(p)
		}
		return p
	}
	runningPod := pod(nil)
	runningPod.Status = RunningStatus(runningPod, node, t0)
	now := metav1.NewTime(t0)
	tests := []struct {
		name string
		pod  *corev1.Pod
		want Action
	}{
		{"a new pod on this node is started", pod(nil), UpdateStatus},
		{"an unbound pod is not ours", pod(func(p *corev1.Pod) { p.Spec.NodeName = "" }), None},
		{"another node's pod is not ours", pod(func(p *corev1.Pod) { p.Spec.NodeName = "hollow-2" }), None},
		{"a running pod is left alone", runningPod, None},
		{"a terminating pod is deleted for good", pod(func(p *corev1.Pod) { p.DeletionTimestamp = &now }), Delete},
		{"a terminating running pod is deleted for good", func() *corev1.Pod { p := runningPod.DeepCopy(); p.DeletionTimestamp = &now; return p }(), Delete},
		{"a finished pod stays finished", pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), None},
		{"a pod running but not ready is fixed", func() *corev1.Pod {
			p := runningPod.DeepCopy()
			p.Status.ContainerStatuses[1].Ready = false
			return p
		}(), UpdateStatus},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			act, st, _ := Plan(tc.pod, node, t0.Add(time.Minute), Finish{})
			if act != tc.want {
				t.Fatalf("Plan = %v, want %v", act, tc.want)
			}
			if (st != nil) != (act == UpdateStatus) {
				t.Fatalf("Plan returned status %v with %v", st, act)
			}
		})
	}
}

func TestRunningStatus(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	withCIDR := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{PodCIDR: "10.244.3.0/24"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.1.0.3"}}}}
	noCIDR := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1", UID: "uid-1"},
		Spec:   corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
		Status: corev1.PodStatus{QOSClass: corev1.PodQOSBestEffort}}
	earlier := metav1.NewTime(t0.Add(-time.Hour))
	kept := p.DeepCopy()
	kept.Status.PodIP, kept.Status.StartTime, kept.Status.HostIP = "10.244.3.77", &earlier, "127.1.0.10"
	tests := []struct {
		name    string
		pod     *corev1.Pod
		node    *corev1.Node
		inCIDR  string
		ip      string // exact, when set
		hostIP  string
		started time.Time
	}{
		{"from the node's podCIDR", p, withCIDR, "10.244.3.0/24", "", "127.1.0.3", t0},
		{"without a podCIDR: 10.244.0.0/16", p, noCIDR, "10.244.0.0/16", "", "", t0},
		{"addresses and start time already reported are kept", kept, withCIDR, "10.244.3.0/24", "10.244.3.77", "127.1.0.10", earlier.Time},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := RunningStatus(tc.pod, tc.node, t0)
			ip, err := netip.ParseAddr(st.PodIP)
			if err != nil || !netip.MustParsePrefix(tc.inCIDR).Contains(ip) || (tc.ip != "" && st.PodIP != tc.ip) {
				t.Errorf("podIP %q, want one in %s (%q)", st.PodIP, tc.inCIDR, tc.ip)
			}
			if again := RunningStatus(tc.pod, tc.node, t0.Add(time.Second)); again.PodIP != st.PodIP {
				t.Errorf("podIP is not stable: %s then %s", st.PodIP, again.PodIP)
			}
			if st.HostIP != tc.hostIP || st.Phase != corev1.PodRunning || !st.StartTime.Time.Equal(tc.started) || st.QOSClass != corev1.PodQOSBestEffort {
				t.Errorf("status %+v", st)
			}
			for _, c := range st.Conditions {
				if c.Status != corev1.ConditionTrue {
					t.Errorf("condition %s = %s", c.Type, c.Status)
				}
			}
			if len(st.Conditions) != 4 || len(st.ContainerStatuses) != 1 || !st.ContainerStatuses[0].Ready || st.ContainerStatuses[0].State.Running == nil || st.ContainerStatuses[0].ContainerID == "" {
				t.Errorf("conditions %v containers %+v", st.Conditions, st.ContainerStatuses)
			}
			pod := tc.pod.DeepCopy()
			pod.Status = st
			if act, _, _ := Plan(pod, tc.node, t0, Finish{}); act != None {
				t.Errorf("a pod with its running status plans %v, want None", act)
			}
		})
	}
}

func TestPodIPAvoidsNetworkAndGateway(t *testing.T) {
	t.Parallel()
	node := &corev1.Node{Spec: corev1.NodeSpec{PodCIDR: "10.244.9.0/30"}}
	for i := range 50 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: types.UID(fmt.Sprint("u", i))}}
		if ip := PodIP(p, node); ip != "10.244.9.2" {
			t.Fatalf("PodIP in a /30 = %s, want 10.244.9.2", ip)
		}
	}
}

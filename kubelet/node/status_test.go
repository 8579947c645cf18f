package node

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func testConfig(t *testing.T) Config {
	t.Helper()
	capacity, err := Capacity("4", "32Gi", "100Gi", 110)
	if err != nil {
		t.Fatal(err)
	}
	return Config{Name: "n1", InternalIP: "10.10.0.1", Capacity: capacity, Labels: map[string]string{corev1.LabelInstanceTypeStable: "hollow"},
		NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.33.0-kubebus", ContainerRuntimeVersion: "simulated://1", OperatingSystem: "linux", Architecture: "amd64"}}
}

func cond(st corev1.NodeStatus, typ corev1.NodeConditionType) corev1.NodeCondition {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return corev1.NodeCondition{}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	posted, _ := Status(cfg, Health{}, corev1.NodeStatus{}, t0)
	tests := []struct {
		name     string
		health   Health
		cur      corev1.NodeStatus
		now      time.Time
		post     bool
		ready    corev1.ConditionStatus
		reason   string
		since    time.Time // Ready's lastTransitionTime
		heartbit time.Time
	}{
		{"a new node posts everything", Health{}, corev1.NodeStatus{}, t0, true, corev1.ConditionTrue, "KubeletReady", t0, t0},
		{"unchanged within a minute: nothing to post", Health{}, posted, t0.Add(50 * time.Second), false, corev1.ConditionTrue, "KubeletReady", t0, t0},
		{"unchanged for a minute: a heartbeat", Health{}, posted, t0.Add(time.Minute), true, corev1.ConditionTrue, "KubeletReady", t0, t0.Add(time.Minute)},
		{"not ready: posted at once, transition moves", Health{NotReady: "runtime down"}, posted, t0.Add(5 * time.Second), true, corev1.ConditionFalse, "KubeletNotReady", t0.Add(5 * time.Second), t0.Add(5 * time.Second)},
		{"capacity changed by someone: put back", Health{}, func() corev1.NodeStatus {
			s := *posted.DeepCopy()
			s.Capacity = nil
			return s
		}(), t0.Add(time.Second), true, corev1.ConditionTrue, "KubeletReady", t0, t0.Add(time.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, post := Status(cfg, tc.health, tc.cur, tc.now)
			if post != tc.post {
				t.Fatalf("post = %v, want %v", post, tc.post)
			}
			r := cond(st, corev1.NodeReady)
			if r.Status != tc.ready || r.Reason != tc.reason || !r.LastTransitionTime.Time.Equal(tc.since) || !r.LastHeartbeatTime.Time.Equal(tc.heartbit) {
				t.Errorf("Ready = %s/%s since %v heartbeat %v; want %s/%s since %v heartbeat %v", r.Status, r.Reason, r.LastTransitionTime, r.LastHeartbeatTime, tc.ready, tc.reason, tc.since, tc.heartbit)
			}
			for _, p := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
				if c := cond(st, p); c.Status != corev1.ConditionFalse {
					t.Errorf("%s = %q, want False", p, c.Status)
				}
			}
			if st.Capacity.Pods().Value() != 110 || st.Allocatable.Cpu().String() != "4" || st.Allocatable.Memory().String() != "32Gi" {
				t.Errorf("capacity %v allocatable %v", st.Capacity, st.Allocatable)
			}
			if len(st.Addresses) != 2 || st.Addresses[0] != (corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.10.0.1"}) {
				t.Errorf("addresses %v", st.Addresses)
			}
			if st.NodeInfo.ContainerRuntimeVersion != "simulated://1" {
				t.Errorf("nodeInfo %+v", st.NodeInfo)
			}
		})
	}
}

func TestStatusKeepsOthersConditions(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cur := corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: "RouteCreated"}},
		Images: []corev1.ContainerImage{{Names: []string{"busybox"}}}}
	st, _ := Status(cfg, Health{}, cur, t0)
	if c := cond(st, corev1.NodeNetworkUnavailable); c.Reason != "RouteCreated" || len(st.Images) != 1 || len(st.Conditions) != 5 {
		t.Errorf("conditions %v images %v", st.Conditions, st.Images)
	}
}

func TestNewAndLease(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	n := New(cfg)
	for k, v := range map[string]string{"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": "hollow"} {
		if n.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
		}
	}
	n.UID = "u1"
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := Lease(n, nil, t0)
	if l.Namespace != "kube-node-lease" || *l.Spec.HolderIdentity != "n1" || *l.Spec.LeaseDurationSeconds != 40 || !l.Spec.RenewTime.Time.Equal(t0) || l.OwnerReferences[0].UID != "u1" {
		t.Errorf("new lease %+v", l)
	}
	l.ResourceVersion = "7"
	l2 := Lease(n, l, t0.Add(10*time.Second))
	if l2.ResourceVersion != "7" || !l2.Spec.RenewTime.Time.Equal(t0.Add(10*time.Second)) || !l.Spec.RenewTime.Time.Equal(t0) {
		t.Errorf("renewed lease %+v (the old one must not change: %v)", l2, l.Spec.RenewTime)
	}
}

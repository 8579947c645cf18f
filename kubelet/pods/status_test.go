package pods

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

func cond(st corev1.PodStatus, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}

// condSummary is "True", or "False/Reason".
func condSummary(c corev1.PodCondition) string {
	if c.Status == corev1.ConditionTrue {
		return "True"
	}
	return string(c.Status) + "/" + c.Reason
}

// stateSummary describes a container state in a word: running,
// terminated:<code>:<reason>, waiting:<reason>.
func stateSummary(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running"
	case s.Terminated != nil:
		return "terminated:" + itoa(s.Terminated.ExitCode) + ":" + s.Terminated.Reason
	case s.Waiting != nil:
		return "waiting:" + s.Waiting.Reason
	}
	return ""
}

func itoa(i int32) string { return resource.NewQuantity(int64(i), resource.DecimalSI).String() }

func TestComputeStatus(t *testing.T) {
	t.Parallel()
	probed := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{}
		p.Spec.Containers[0].StartupProbe = &corev1.Probe{}
		return p
	}
	type want struct {
		phase                                    corev1.PodPhase
		reason                                   string
		scheduled, initialized, ready, sandboxOK string
		states                                   []string // containerStatuses, spec order
		initStates                               []string
		readyC                                   []bool
		startedC                                 []bool
		restarts                                 []int32
		podIP                                    string
	}
	tests := []struct {
		name string
		in   StatusInput
		want want
	}{
		{
			name: "nothing created yet",
			in:   StatusInput{Pod: testPod("a", "b")},
			want: want{phase: corev1.PodPending, scheduled: "True", initialized: "True", ready: "False/ContainersNotReady", sandboxOK: "False/",
				states: []string{"waiting:ContainerCreating", "waiting:ContainerCreating"}, readyC: []bool{false, false},
				startedC: []bool{false, false}, restarts: []int32{0, 0}},
		},
		{
			name: "init container running",
			in: StatusInput{Pod: withInit(testPod("app"), "i0", "i1"), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{running(nil, "c1", "i0", "s1", 0, at(0))}},
			want: want{phase: corev1.PodPending, scheduled: "True", initialized: "False/ContainersNotInitialized", ready: "False/ContainersNotReady", sandboxOK: "True",
				states: []string{"waiting:PodInitializing"}, initStates: []string{"running", "waiting:PodInitializing"},
				readyC: []bool{false}, startedC: []bool{false}, restarts: []int32{0}, podIP: "10.0.0.5"},
		},
		{
			name: "running and ready",
			in: StatusInput{Pod: withInit(testPod("app"), "i0"), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{exited(nil, "c0", "i0", "s1", 0, 0, at(0), at(1)), running(nil, "c1", "app", "s1", 2, at(2))}},
			want: want{phase: corev1.PodRunning, scheduled: "True", initialized: "True", ready: "True", sandboxOK: "True",
				states: []string{"running"}, initStates: []string{"terminated:0:Completed"},
				readyC: []bool{true}, startedC: []bool{true}, restarts: []int32{2}, podIP: "10.0.0.5"},
		},
		{
			name: "startup probe pending: not started, not ready",
			in: StatusInput{Pod: probed(testPod("app")), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{running(nil, "c1", "app", "s1", 0, at(2))}},
			want: want{phase: corev1.PodRunning, scheduled: "True", initialized: "True", ready: "False/ContainersNotReady", sandboxOK: "True",
				states: []string{"running"}, readyC: []bool{false}, startedC: []bool{false}, restarts: []int32{0}, podIP: "10.0.0.5"},
		},
		{
			name: "started, readiness pending",
			in: StatusInput{Pod: probed(testPod("app")), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{running(nil, "c1", "app", "s1", 0, at(2))},
				Probes:     map[string]ContainerProbes{"c1": {Startup: ProbeSuccess}}},
			want: want{phase: corev1.PodRunning, scheduled: "True", initialized: "True", ready: "False/ContainersNotReady", sandboxOK: "True",
				states: []string{"running"}, readyC: []bool{false}, startedC: []bool{true}, restarts: []int32{0}, podIP: "10.0.0.5"},
		},
		{
			name: "started and readiness succeeded",
			in: StatusInput{Pod: probed(testPod("app")), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{running(nil, "c1", "app", "s1", 0, at(2))},
				Probes:     map[string]ContainerProbes{"c1": {Startup: ProbeSuccess, Readiness: ProbeSuccess}}},
			want: want{phase: corev1.PodRunning, scheduled: "True", initialized: "True", ready: "True", sandboxOK: "True",
				states: []string{"running"}, readyC: []bool{true}, startedC: []bool{true}, restarts: []int32{0}, podIP: "10.0.0.5"},
		},
		{
			name: "crash-looping: waiting over the last termination",
			in: StatusInput{Pod: testPod("app"), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{exited(nil, "c1", "app", "s1", 3, 2, at(0), at(1))},
				Waiting:    map[string]Waiting{"app": {Reason: "CrashLoopBackOff", Message: "back-off"}}},
			want: want{phase: corev1.PodRunning, scheduled: "True", initialized: "True", ready: "False/ContainersNotReady", sandboxOK: "True",
				states: []string{"waiting:CrashLoopBackOff"}, readyC: []bool{false}, startedC: []bool{false}, restarts: []int32{3}, podIP: "10.0.0.5"},
		},
		{
			name: "OnFailure, all exited 0: Succeeded",
			in: StatusInput{Pod: withPolicy(testPod("a", "b"), corev1.RestartPolicyOnFailure), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{exited(nil, "c1", "a", "s1", 0, 0, at(0), at(1)), exited(nil, "c2", "b", "s1", 1, 0, at(0), at(1))}},
			want: want{phase: corev1.PodSucceeded, scheduled: "True", initialized: "True", ready: "False/PodCompleted", sandboxOK: "True",
				states: []string{"terminated:0:Completed", "terminated:0:Completed"}, readyC: []bool{false, false}, startedC: []bool{false, false},
				restarts: []int32{0, 1}, podIP: "10.0.0.5"},
		},
		{
			name: "Never, one failed: Failed",
			in: StatusInput{Pod: withPolicy(testPod("a", "b"), corev1.RestartPolicyNever), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{exited(nil, "c1", "a", "s1", 0, 0, at(0), at(1)), exited(nil, "c2", "b", "s1", 0, 3, at(0), at(1))}},
			want: want{phase: corev1.PodFailed, scheduled: "True", initialized: "True", ready: "False/ContainersNotReady", sandboxOK: "True",
				states: []string{"terminated:0:Completed", "terminated:3:Error"}, readyC: []bool{false, false}, startedC: []bool{false, false},
				restarts: []int32{0, 0}, podIP: "10.0.0.5"},
		},
		{
			name: "Never, one still running: Running",
			in: StatusInput{Pod: withPolicy(testPod("a", "b"), corev1.RestartPolicyNever), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{exited(nil, "c1", "a", "s1", 0, 1, at(0), at(1)), running(nil, "c2", "b", "s1", 0, at(0))}},
			want: want{phase: corev1.PodRunning, scheduled: "True", initialized: "True", ready: "False/ContainersNotReady", sandboxOK: "True",
				states: []string{"terminated:1:Error", "running"}, readyC: []bool{false, true}, startedC: []bool{false, true},
				restarts: []int32{0, 0}, podIP: "10.0.0.5"},
		},
		{
			name: "Always, all exited: Running",
			in: StatusInput{Pod: testPod("a"), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{func() runtime.Container {
					c := exited(nil, "c1", "a", "s1", 0, 137, at(0), at(1))
					c.Reason = "OOMKilled"
					return c
				}()}},
			want: want{phase: corev1.PodRunning, scheduled: "True", initialized: "True", ready: "False/ContainersNotReady", sandboxOK: "True",
				states: []string{"terminated:137:OOMKilled"}, readyC: []bool{false}, startedC: []bool{false}, restarts: []int32{0}, podIP: "10.0.0.5"},
		},
		{
			name: "init failed under Never: Failed",
			in: StatusInput{Pod: withPolicy(withInit(testPod("app"), "i0"), corev1.RestartPolicyNever), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{exited(nil, "c0", "i0", "s1", 0, 1, at(0), at(1))}},
			want: want{phase: corev1.PodFailed, scheduled: "True", initialized: "False/ContainersNotInitialized", ready: "False/ContainersNotReady", sandboxOK: "True",
				states: []string{"waiting:PodInitializing"}, initStates: []string{"terminated:1:Error"}, readyC: []bool{false}, startedC: []bool{false},
				restarts: []int32{0}, podIP: "10.0.0.5"},
		},
		{
			name: "init failed under Always: Pending, init crash-looping",
			in: StatusInput{Pod: withInit(testPod("app"), "i0"), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{exited(nil, "c0", "i0", "s1", 1, 1, at(0), at(1))},
				Waiting:    map[string]Waiting{"i0": {Reason: "CrashLoopBackOff"}}},
			want: want{phase: corev1.PodPending, scheduled: "True", initialized: "False/ContainersNotInitialized", ready: "False/ContainersNotReady", sandboxOK: "True",
				states: []string{"waiting:PodInitializing"}, initStates: []string{"waiting:CrashLoopBackOff"}, readyC: []bool{false}, startedC: []bool{false},
				restarts: []int32{0}, podIP: "10.0.0.5"},
		},
		{
			name: "start error from the caller",
			in: StatusInput{Pod: testPod("app"), Sandboxes: []runtime.Sandbox{ready("s1")},
				Waiting: map[string]Waiting{"app": {Reason: "CreateContainerConfigError", Message: `configmap "x" not found`}}},
			want: want{phase: corev1.PodPending, scheduled: "True", initialized: "True", ready: "False/ContainersNotReady", sandboxOK: "True",
				states: []string{"waiting:CreateContainerConfigError"}, readyC: []bool{false}, startedC: []bool{false}, restarts: []int32{0}, podIP: "10.0.0.5"},
		},
		{
			name: "deleted, containers stopped by the signal: Failed",
			in: StatusInput{Pod: func() *corev1.Pod {
				p := testPod("app")
				ts := metav1.NewTime(t0)
				p.DeletionTimestamp = &ts
				return p
			}(), Sandboxes: []runtime.Sandbox{dead("s1", at(0))},
				Containers: []runtime.Container{exited(nil, "c1", "app", "s1", 0, 143, at(0), at(1))}},
			want: want{phase: corev1.PodFailed, scheduled: "True", initialized: "True", ready: "False/ContainersNotReady", sandboxOK: "False/",
				states: []string{"terminated:143:Error"}, readyC: []bool{false}, startedC: []bool{false}, restarts: []int32{0}},
		},
		{
			name: "active deadline exceeded",
			in: StatusInput{Pod: func() *corev1.Pod {
				p := testPod("app")
				ts := metav1.NewTime(at(-100))
				p.Status.StartTime, p.Spec.ActiveDeadlineSeconds = &ts, ptr[int64](10)
				return p
			}(), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{running(nil, "c1", "app", "s1", 0, at(-99))}},
			want: want{phase: corev1.PodFailed, reason: ReasonDeadlineExceeded, scheduled: "True", initialized: "True", ready: "True", sandboxOK: "True",
				states: []string{"running"}, readyC: []bool{true}, startedC: []bool{true}, restarts: []int32{0}, podIP: "10.0.0.5"},
		},
		{
			name: "a final phase is kept",
			in: StatusInput{Pod: func() *corev1.Pod {
				p := testPod("app")
				p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted"
				p.Status.PodIP, p.Status.PodIPs = "10.0.0.9", []corev1.PodIP{{IP: "10.0.0.9"}}
				return p
			}()},
			want: want{phase: corev1.PodFailed, reason: "Evicted", scheduled: "True", initialized: "True", ready: "False/ContainersNotReady", sandboxOK: "False/",
				states: []string{"waiting:ContainerCreating"}, readyC: []bool{false}, startedC: []bool{false}, restarts: []int32{0}, podIP: "10.0.0.9"},
		},
		{
			// The runtime lost the container (removed, or the runtime's state
			// is gone): it stays terminated as last reported, as upstream's
			// kubelet keeps it, never waiting to be created again.
			name: "a terminated container the runtime no longer has stays terminated",
			in: StatusInput{Pod: func() *corev1.Pod {
				p := testPod("app")
				p.Spec.RestartPolicy = corev1.RestartPolicyNever
				p.Status.Phase = corev1.PodSucceeded
				p.Status.PodIP, p.Status.PodIPs = "10.0.0.9", []corev1.PodIP{{IP: "10.0.0.9"}}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: 2, Ready: true, Started: ptr(true),
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}
				return p
			}()},
			want: want{phase: corev1.PodSucceeded, scheduled: "True", initialized: "True", ready: "False/PodCompleted", sandboxOK: "False/",
				states: []string{"terminated:0:Completed"}, readyC: []bool{false}, startedC: []bool{false}, restarts: []int32{2}, podIP: "10.0.0.9"},
		},
		{
			// The same for a completed init container: it stays ready, so
			// the pod stays initialized.
			name: "a completed init container the runtime no longer has stays terminated and ready",
			in: StatusInput{Pod: func() *corev1.Pod {
				p := withInit(testPod("app"), "setup")
				p.Spec.RestartPolicy = corev1.RestartPolicyNever
				p.Status.Phase = corev1.PodSucceeded
				p.Status.PodIP, p.Status.PodIPs = "10.0.0.9", []corev1.PodIP{{IP: "10.0.0.9"}}
				done := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "setup", Ready: true, State: done}}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: done}}
				return p
			}()},
			want: want{phase: corev1.PodSucceeded, scheduled: "True", initialized: "True", ready: "False/PodCompleted", sandboxOK: "False/",
				states: []string{"terminated:0:Completed"}, initStates: []string{"terminated:0:Completed"}, readyC: []bool{false}, startedC: []bool{false},
				restarts: []int32{0}, podIP: "10.0.0.9"},
		},
		{
			name: "sidecar running, startup pending: not initialized",
			in: StatusInput{Pod: func() *corev1.Pod {
				p := withSidecar(testPod("app"), "proxy")
				p.Spec.InitContainers[0].StartupProbe = &corev1.Probe{}
				return p
			}(), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{running(nil, "c0", "proxy", "s1", 0, at(0))}},
			want: want{phase: corev1.PodPending, scheduled: "True", initialized: "False/ContainersNotInitialized", ready: "False/ContainersNotReady", sandboxOK: "True",
				states: []string{"waiting:PodInitializing"}, initStates: []string{"running"}, readyC: []bool{false}, startedC: []bool{false},
				restarts: []int32{0}, podIP: "10.0.0.5"},
		},
		{
			name: "sidecar running and started, main running",
			in: StatusInput{Pod: withSidecar(testPod("app"), "proxy"), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{running(nil, "c0", "proxy", "s1", 0, at(0)), running(nil, "c1", "app", "s1", 0, at(1))}},
			want: want{phase: corev1.PodRunning, scheduled: "True", initialized: "True", ready: "True", sandboxOK: "True",
				states: []string{"running"}, initStates: []string{"running"}, readyC: []bool{true}, startedC: []bool{true},
				restarts: []int32{0}, podIP: "10.0.0.5"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.in.Now = at(10)
			tc.in.HostIPs = []string{"192.168.1.10"}
			st := ComputeStatus(tc.in)
			w := tc.want
			if st.Phase != w.phase || st.Reason != w.reason {
				t.Errorf("phase = %s/%q, want %s/%q", st.Phase, st.Reason, w.phase, w.reason)
			}
			for _, c := range []struct {
				t    corev1.PodConditionType
				want string
			}{{corev1.PodScheduled, w.scheduled}, {corev1.PodInitialized, w.initialized}, {corev1.PodReady, w.ready},
				{corev1.ContainersReady, w.ready}, {corev1.PodReadyToStartContainers, w.sandboxOK}} {
				if got := condSummary(cond(st, c.t)); got != c.want {
					t.Errorf("condition %s = %s, want %s", c.t, got, c.want)
				}
			}
			if len(st.ContainerStatuses) != len(w.states) || len(st.InitContainerStatuses) != len(w.initStates) {
				t.Fatalf("got %d container and %d init statuses, want %d and %d", len(st.ContainerStatuses), len(st.InitContainerStatuses), len(w.states), len(w.initStates))
			}
			for i, cs := range st.ContainerStatuses {
				if cs.Name != tc.in.Pod.Spec.Containers[i].Name {
					t.Errorf("status %d is %s, want spec order", i, cs.Name)
				}
				if got := stateSummary(cs.State); got != w.states[i] {
					t.Errorf("%s state = %s, want %s", cs.Name, got, w.states[i])
				}
				if cs.Ready != w.readyC[i] || *cs.Started != w.startedC[i] || cs.RestartCount != w.restarts[i] {
					t.Errorf("%s ready/started/restarts = %v/%v/%d, want %v/%v/%d", cs.Name, cs.Ready, *cs.Started, cs.RestartCount, w.readyC[i], w.startedC[i], w.restarts[i])
				}
			}
			for i, cs := range st.InitContainerStatuses {
				if got := stateSummary(cs.State); got != w.initStates[i] {
					t.Errorf("init %s state = %s, want %s", cs.Name, got, w.initStates[i])
				}
			}
			if st.PodIP != w.podIP {
				t.Errorf("podIP = %q, want %q", st.PodIP, w.podIP)
			}
			if st.HostIP != "192.168.1.10" || len(st.HostIPs) != 1 {
				t.Errorf("hostIP = %q %v", st.HostIP, st.HostIPs)
			}
		})
	}
}

func TestComputeStatusDetails(t *testing.T) {
	t.Parallel()
	pod := testPod("app")
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/gate"}}
	startTime := metav1.NewTime(at(-50))
	lt := metav1.NewTime(at(-40))
	pod.Status = corev1.PodStatus{
		StartTime: &startTime,
		QOSClass:  corev1.PodQOSGuaranteed,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: lt},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: lt},
			{Type: "example.com/gate", Status: corev1.ConditionFalse},
		},
	}
	prev := exited(nil, "c1", "app", "s1", 0, 2, at(-30), at(-20))
	cur := running(nil, "c2", "app", "s1", 1, at(-19).Add(300*time.Millisecond))
	cur.ImageID = "docker.io/library/busybox@sha256:abc"
	st := ComputeStatus(StatusInput{Pod: pod, Sandboxes: []runtime.Sandbox{ready("s1")}, Containers: []runtime.Container{cur, prev}, Now: at(10)})

	if !st.StartTime.Equal(&startTime) || st.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("startTime %v qos %s not kept", st.StartTime, st.QOSClass)
	}
	if c := cond(st, corev1.ContainersReady); !c.LastTransitionTime.Equal(&lt) {
		t.Errorf("ContainersReady transition %v, want kept %v", c.LastTransitionTime, lt)
	}
	if c := cond(st, corev1.PodReady); c.Status != corev1.ConditionFalse || c.Reason != ReasonReadinessGatesNotReady ||
		c.Message != `the status of pod readiness gate "example.com/gate" is not "True", but False` || !c.LastTransitionTime.Equal(ptr(metav1.NewTime(at(10)))) {
		t.Errorf("Ready = %+v", c)
	}
	if c := cond(st, "example.com/gate"); c.Status != corev1.ConditionFalse {
		t.Errorf("foreign condition not kept: %+v", st.Conditions)
	}
	if st.Conditions[0].Type != "example.com/gate" {
		t.Errorf("foreign condition not first: %v", st.Conditions)
	}
	cs := st.ContainerStatuses[0]
	if cs.ContainerID != "containerd://c2" || cs.ImageID != "docker.io/library/busybox@sha256:abc" || cs.Image != "busybox" {
		t.Errorf("ids: %q %q %q", cs.ContainerID, cs.ImageID, cs.Image)
	}
	if cs.State.Running == nil || !cs.State.Running.StartedAt.Time.Equal(at(-19)) {
		t.Errorf("running state %+v, want startedAt truncated to %v", cs.State, at(-19))
	}
	term := cs.LastTerminationState.Terminated
	if term == nil || term.ExitCode != 2 || term.ContainerID != "containerd://c1" || !term.FinishedAt.Time.Equal(at(-20)) || !term.StartedAt.Time.Equal(at(-30)) {
		t.Errorf("lastState = %+v", cs.LastTerminationState)
	}

	// Without a ready sandbox the old addresses stay; without a start time
	// the current time is taken; the QoS class is computed when missing.
	pod2 := testPod("app")
	pod2.Status.PodIP, pod2.Status.PodIPs = "10.0.0.7", []corev1.PodIP{{IP: "10.0.0.7"}}
	pod2.Status.HostIP, pod2.Status.HostIPs = "192.168.1.1", []corev1.HostIP{{IP: "192.168.1.1"}}
	st2 := ComputeStatus(StatusInput{Pod: pod2, Sandboxes: []runtime.Sandbox{dead("s1", at(0))}, Now: at(10).Add(500 * time.Millisecond)})
	if st2.PodIP != "10.0.0.7" || len(st2.PodIPs) != 1 {
		t.Errorf("pod IPs not kept: %q %v", st2.PodIP, st2.PodIPs)
	}
	if st2.HostIP != "192.168.1.1" || len(st2.HostIPs) != 1 {
		t.Errorf("host IPs not kept: %q %v", st2.HostIP, st2.HostIPs)
	}
	if st2.StartTime == nil || !st2.StartTime.Time.Equal(at(10)) {
		t.Errorf("startTime = %v, want %v", st2.StartTime, at(10))
	}
	if st2.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("qos = %s", st2.QOSClass)
	}
	if c := cond(st2, corev1.PodReady); c.Message != "containers with unready status: [app]" {
		t.Errorf("Ready message = %q", c.Message)
	}
}

func TestQOSClass(t *testing.T) {
	t.Parallel()
	rl := func(cpu, mem string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	tests := []struct {
		name       string
		containers []corev1.ResourceRequirements
		want       corev1.PodQOSClass
	}{
		{"nothing", []corev1.ResourceRequirements{{}}, corev1.PodQOSBestEffort},
		{"limits equal requests", []corev1.ResourceRequirements{{Requests: rl("1", "1Gi"), Limits: rl("1", "1Gi")}}, corev1.PodQOSGuaranteed},
		{"limits only (requests default to them)", []corev1.ResourceRequirements{{Limits: rl("500m", "128Mi")}}, corev1.PodQOSGuaranteed},
		{"requests below limits", []corev1.ResourceRequirements{{Requests: rl("100m", "1Gi"), Limits: rl("1", "1Gi")}}, corev1.PodQOSBurstable},
		{"only memory limit", []corev1.ResourceRequirements{{Limits: rl("", "1Gi")}}, corev1.PodQOSBurstable},
		{"one container best effort", []corev1.ResourceRequirements{{Requests: rl("1", "1Gi"), Limits: rl("1", "1Gi")}, {}}, corev1.PodQOSBurstable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := testPod()
			for i, r := range tc.containers {
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c" + itoa(int32(i)), Resources: r})
			}
			if got := QOSClass(p); got != tc.want {
				t.Fatalf("QOSClass = %s, want %s", got, tc.want)
			}
		})
	}
}

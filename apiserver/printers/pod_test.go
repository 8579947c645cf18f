package printers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Container status builders.

func running(name string, ready bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: ready,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(time.Hour)}}}
}

func waiting(name, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func terminated(name, reason string, exitCode, signal int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: exitCode, Signal: signal}}}
}

// restarted records n restarts, the last one finished d ago.
func restarted(st corev1.ContainerStatus, n int32, d time.Duration) corev1.ContainerStatus {
	st.RestartCount = n
	if d > 0 {
		st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: ago(d)}
	}
	return st
}

func started(st corev1.ContainerStatus) corev1.ContainerStatus {
	yes := true
	st.Started = &yes
	return st
}

func containers(names ...string) []corev1.Container {
	cs := make([]corev1.Container, len(names))
	for i, n := range names {
		cs[i] = corev1.Container{Name: n, Image: n + ":latest"}
	}
	return cs
}

func sidecar(name string) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	return corev1.Container{Name: name, RestartPolicy: &always}
}

func condition(t corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
	return corev1.PodCondition{Type: t, Status: s}
}

func TestPodCells(t *testing.T) {
	t.Parallel()
	deleted := ago(10 * time.Second)
	tests := []struct {
		name                    string
		pod                     corev1.Pod
		ready, status, restarts string
	}{
		{
			name: "running and ready",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("web")},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running("web", true)}}},
			ready: "1/1", status: "Running", restarts: "0",
		},
		{
			name: "one of two ready",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("web", "log")},
				Status: corev1.PodStatus{Phase: corev1.PodRunning,
					ContainerStatuses: []corev1.ContainerStatus{running("web", true), running("log", false)}}},
			ready: "1/2", status: "Running", restarts: "0",
		},
		{
			name:  "pending without statuses",
			pod:   corev1.Pod{Spec: corev1.PodSpec{Containers: containers("web")}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
			ready: "0/1", status: "Pending", restarts: "0",
		},
		{
			name: "status reason wins over phase",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("web")},
				Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}},
			ready: "0/1", status: "Evicted", restarts: "0",
		},
		{
			name: "scheduling gated",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("web")},
				Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
					{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}}},
			ready: "0/1", status: "SchedulingGated", restarts: "0",
		},
		{
			name: "crash loop with restarts",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("web")},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
					restarted(waiting("web", "CrashLoopBackOff"), 5, 5*time.Minute)}}},
			ready: "0/1", status: "CrashLoopBackOff", restarts: "5 (5m ago)",
		},
		{
			name: "restarts summed, latest restart shown",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("web", "log")},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
					restarted(running("web", true), 2, 3*time.Hour), restarted(running("log", true), 1, 40*time.Second)}}},
			ready: "2/2", status: "Running", restarts: "3 (40s ago)",
		},
		{
			name: "restarts without a last termination",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("web")},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
					restarted(running("web", true), 3, 0)}}},
			ready: "1/1", status: "Running", restarts: "3",
		},
		{
			name: "image pull error",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("web")},
				Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{waiting("web", "ErrImagePull")}}},
			ready: "0/1", status: "ErrImagePull", restarts: "0",
		},
		{
			name: "first container's state wins",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("web", "log")},
				Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
					waiting("web", "ImagePullBackOff"), waiting("log", "ContainerCreating")}}},
			ready: "0/2", status: "ImagePullBackOff", restarts: "0",
		},
		{
			name: "completed",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("job")},
				Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{terminated("job", "Completed", 0, 0)}}},
			ready: "0/1", status: "Completed", restarts: "0",
		},
		{
			name: "error",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("job")},
				Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{terminated("job", "Error", 1, 0)}}},
			ready: "0/1", status: "Error", restarts: "0",
		},
		{
			name: "exit code without reason",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("job")},
				Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{terminated("job", "", 137, 0)}}},
			ready: "0/1", status: "ExitCode:137", restarts: "0",
		},
		{
			name: "signal without reason",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("job")},
				Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{terminated("job", "", 0, 9)}}},
			ready: "0/1", status: "Signal:9", restarts: "0",
		},
		{
			name: "completed next to a running container, pod ready",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("done", "web")},
				Status: corev1.PodStatus{Phase: corev1.PodRunning,
					Conditions:        []corev1.PodCondition{condition(corev1.PodReady, corev1.ConditionTrue)},
					ContainerStatuses: []corev1.ContainerStatus{terminated("done", "Completed", 0, 0), running("web", true)}}},
			ready: "1/2", status: "Running", restarts: "0",
		},
		{
			name: "completed next to a running container, pod not ready",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("done", "web")},
				Status: corev1.PodStatus{Phase: corev1.PodRunning,
					Conditions:        []corev1.PodCondition{condition(corev1.PodReady, corev1.ConditionFalse)},
					ContainerStatuses: []corev1.ContainerStatus{terminated("done", "Completed", 0, 0), running("web", true)}}},
			ready: "1/2", status: "NotReady", restarts: "0",
		},
		{
			name: "first init container running",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: containers("migrate", "seed"), Containers: containers("web")},
				Status: corev1.PodStatus{Phase: corev1.PodPending,
					InitContainerStatuses: []corev1.ContainerStatus{running("migrate", false), waiting("seed", "PodInitializing")},
					ContainerStatuses:     []corev1.ContainerStatus{waiting("web", "PodInitializing")}}},
			ready: "0/1", status: "Init:0/2", restarts: "0",
		},
		{
			name: "second init container starting",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: containers("migrate", "seed"), Containers: containers("web")},
				Status: corev1.PodStatus{Phase: corev1.PodPending,
					InitContainerStatuses: []corev1.ContainerStatus{terminated("migrate", "Completed", 0, 0), waiting("seed", "PodInitializing")},
					ContainerStatuses:     []corev1.ContainerStatus{waiting("web", "PodInitializing")}}},
			ready: "0/1", status: "Init:1/2", restarts: "0",
		},
		{
			name: "init container crash loop counts init restarts",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: containers("migrate"), Containers: containers("web")},
				Status: corev1.PodStatus{Phase: corev1.PodPending,
					InitContainerStatuses: []corev1.ContainerStatus{restarted(waiting("migrate", "CrashLoopBackOff"), 3, time.Minute)},
					ContainerStatuses:     []corev1.ContainerStatus{waiting("web", "PodInitializing")}}},
			ready: "0/1", status: "Init:CrashLoopBackOff", restarts: "3 (60s ago)",
		},
		{
			name: "init container failed",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: containers("migrate"), Containers: containers("web")},
				Status: corev1.PodStatus{Phase: corev1.PodPending,
					InitContainerStatuses: []corev1.ContainerStatus{terminated("migrate", "Error", 1, 0)}}},
			ready: "0/1", status: "Init:Error", restarts: "0",
		},
		{
			name: "init container exit code without reason",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: containers("migrate"), Containers: containers("web")},
				Status: corev1.PodStatus{Phase: corev1.PodPending,
					InitContainerStatuses: []corev1.ContainerStatus{terminated("migrate", "", 2, 0)}}},
			ready: "0/1", status: "Init:ExitCode:2", restarts: "0",
		},
		{
			name: "init container signal without reason",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: containers("migrate"), Containers: containers("web")},
				Status: corev1.PodStatus{Phase: corev1.PodPending,
					InitContainerStatuses: []corev1.ContainerStatus{terminated("migrate", "", 143, 15)}}},
			ready: "0/1", status: "Init:Signal:15", restarts: "0",
		},
		{
			name: "init container image pull error",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: containers("migrate"), Containers: containers("web")},
				Status: corev1.PodStatus{Phase: corev1.PodPending,
					InitContainerStatuses: []corev1.ContainerStatus{waiting("migrate", "ErrImagePull")}}},
			ready: "0/1", status: "Init:ErrImagePull", restarts: "0",
		},
		{
			name: "init done, regular restarts only",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: containers("migrate"), Containers: containers("web")},
				Status: corev1.PodStatus{Phase: corev1.PodRunning,
					InitContainerStatuses: []corev1.ContainerStatus{restarted(terminated("migrate", "Completed", 0, 0), 4, time.Hour)},
					ContainerStatuses:     []corev1.ContainerStatus{restarted(running("web", true), 1, 2*time.Minute)}}},
			ready: "1/1", status: "Running", restarts: "1 (2m ago)",
		},
		{
			name: "initialized condition overrides a stale init status",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: containers("migrate"), Containers: containers("web")},
				Status: corev1.PodStatus{Phase: corev1.PodRunning,
					Conditions:            []corev1.PodCondition{condition(corev1.PodInitialized, corev1.ConditionTrue)},
					InitContainerStatuses: []corev1.ContainerStatus{waiting("migrate", "ContainerCreating")},
					ContainerStatuses:     []corev1.ContainerStatus{restarted(waiting("web", "CrashLoopBackOff"), 2, 3*time.Minute)}}},
			ready: "0/1", status: "CrashLoopBackOff", restarts: "2 (3m ago)",
		},
		{
			name: "sidecar counts as a container",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{sidecar("proxy")}, Containers: containers("web")},
				Status: corev1.PodStatus{Phase: corev1.PodRunning,
					Conditions:            []corev1.PodCondition{condition(corev1.PodInitialized, corev1.ConditionTrue)},
					InitContainerStatuses: []corev1.ContainerStatus{restarted(started(running("proxy", true)), 2, 7*time.Minute)},
					ContainerStatuses:     []corev1.ContainerStatus{running("web", true)}}},
			ready: "2/2", status: "Running", restarts: "2 (7m ago)",
		},
		{
			name: "sidecar started, not ready, next init container running",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{sidecar("proxy"), {Name: "migrate"}}, Containers: containers("web")},
				Status: corev1.PodStatus{Phase: corev1.PodPending,
					InitContainerStatuses: []corev1.ContainerStatus{started(running("proxy", false)), running("migrate", false)}}},
			ready: "0/2", status: "Init:1/2", restarts: "0",
		},
		{
			name: "terminating",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleted}, Spec: corev1.PodSpec{Containers: containers("web")},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running("web", true)}}},
			ready: "1/1", status: "Terminating", restarts: "0",
		},
		{
			name: "deleted after it succeeded",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleted}, Spec: corev1.PodSpec{Containers: containers("job")},
				Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{terminated("job", "Completed", 0, 0)}}},
			ready: "0/1", status: "Completed", restarts: "0",
		},
		{
			name: "node lost",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleted}, Spec: corev1.PodSpec{Containers: containers("web")},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Reason: "NodeLost", ContainerStatuses: []corev1.ContainerStatus{running("web", true)}}},
			ready: "1/1", status: "Unknown", restarts: "0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pod := tt.pod
			pod.Name = "web-1"
			checkCells(t, schema.GroupKind{Kind: "Pod"}, &pod, map[string]interface{}{
				"NAME": "web-1", "READY": tt.ready, "STATUS": tt.status, "RESTARTS": tt.restarts,
			})
		})
	}
}

func TestPodWideCells(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		pod  corev1.Pod
		want map[string]interface{}
	}{
		{
			name: "unscheduled",
			pod:  corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(3 * time.Hour)}},
			want: map[string]interface{}{"AGE": "3h", "IP": "<none>", "NODE": "<none>", "NOMINATED NODE": "<none>", "READINESS GATES": "<none>"},
		},
		{
			name: "scheduled with IPs",
			pod: corev1.Pod{Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{
				PodIPs: []corev1.PodIP{{IP: "10.0.0.9"}, {IP: "fd00::9"}}, NominatedNodeName: "node-b"}},
			want: map[string]interface{}{"AGE": "<unknown>", "IP": "10.0.0.9", "NODE": "node-a", "NOMINATED NODE": "node-b"},
		},
		{
			name: "only the legacy pod IP",
			pod:  corev1.Pod{Status: corev1.PodStatus{PodIP: "10.0.0.7"}},
			want: map[string]interface{}{"IP": "10.0.0.7"},
		},
		{
			name: "readiness gates",
			pod: corev1.Pod{Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{
				{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}, {ConditionType: "example.com/none"}}},
				Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
					condition("example.com/lb", corev1.ConditionTrue), condition("example.com/dns", corev1.ConditionFalse)}}},
			want: map[string]interface{}{"READINESS GATES": "1/3"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkCells(t, schema.GroupKind{Kind: "Pod"}, &tt.pod, tt.want)
		})
	}
}

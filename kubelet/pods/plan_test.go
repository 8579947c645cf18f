package pods

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

func TestCompute(t *testing.T) {
	t.Parallel()
	deleted := func(p *corev1.Pod, grace *int64) *corev1.Pod {
		ts := metav1.NewTime(t0)
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, grace
		return p
	}
	preStop := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
			Exec: &corev1.ExecAction{Command: []string{"sleep", "1"}}}}
		return p
	}
	liveness := func(p *corev1.Pod, grace *int64) *corev1.Pod {
		p.Spec.Containers[0].LivenessProbe = &corev1.Probe{TerminationGracePeriodSeconds: grace}
		return p
	}
	startup := func(p *corev1.Pod, i int) *corev1.Pod {
		p.Spec.InitContainers[i].StartupProbe = &corev1.Probe{}
		return p
	}
	started := func(p *corev1.Pod, phase corev1.PodPhase, startSec int, deadline *int64) *corev1.Pod {
		ts := metav1.NewTime(at(startSec))
		p.Status.StartTime, p.Status.Phase, p.Spec.ActiveDeadlineSeconds = &ts, phase, deadline
		return p
	}

	// Pods shared by several cases (their hashes label the containers).
	one := testPod("app")
	two := testPod("a", "b")
	inits := withInit(testPod("app"), "i0", "i1")
	never := withPolicy(testPod("app"), corev1.RestartPolicyNever)
	onFailure := withPolicy(testPod("a", "b"), corev1.RestartPolicyOnFailure)
	sidecar := startup(withSidecar(testPod("app"), "proxy"), 0)
	sidecarNever := withPolicy(withSidecar(testPod("app"), "proxy"), corev1.RestartPolicyNever)
	changed := testPod("app")
	changedRunning := running(changed, "c1", "app", "s1", 0, at(0))
	changed.Spec.Containers[0].Image = "busybox:2"

	tests := []struct {
		name         string
		in           PlanInput
		want         []string
		wantWaiting  map[string]string // name -> reason
		wantRetry    time.Time
		wantFinished bool
	}{
		{
			name: "new pod: sandbox then all containers",
			in:   PlanInput{Pod: testPod("a", "b")},
			want: []string{"CreateSandbox", "StartContainer container[0] a attempt=0", "StartContainer container[1] b attempt=0"},
		},
		{
			name: "new pod with init containers: only the first init container",
			in:   PlanInput{Pod: withInit(testPod("app"), "i0", "i1")},
			want: []string{"CreateSandbox", "StartContainer init[0] i0 attempt=0"},
		},
		{
			name: "init container running: wait",
			in: PlanInput{Pod: inits, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{running(inits, "c1", "i0", "s1", 0, at(0))}},
			want: []string{},
		},
		{
			name: "init container done: next one",
			in: PlanInput{Pod: inits, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{exited(inits, "c1", "i0", "s1", 0, 0, at(0), at(1))}},
			want: []string{"StartContainer init[1] i1 attempt=0"},
		},
		{
			name: "all init containers done: regular containers",
			in: PlanInput{Pod: inits, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{
					exited(inits, "c1", "i0", "s1", 0, 0, at(0), at(1)),
					exited(inits, "c2", "i1", "s1", 0, 0, at(1), at(2)),
				}},
			want: []string{"StartContainer container[0] app attempt=0"},
		},
		{
			name: "init container failed, Always: restarted at once the first time",
			in: PlanInput{Pod: inits, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{exited(inits, "c1", "i0", "s1", 0, 1, at(0), at(1))}, Now: at(2)},
			want: []string{"StartContainer init[0] i0 attempt=1"},
		},
		{
			name: "init container failed, Never: pod finished, sandbox stopped",
			in: PlanInput{Pod: withPolicy(withInit(testPod("app"), "i0"), corev1.RestartPolicyNever), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{exited(nil, "c1", "i0", "s1", 0, 1, at(0), at(1))}, Now: at(2)},
			want:         []string{"StopSandbox s1"},
			wantFinished: true,
		},
		{
			name: "running pod: nothing to do",
			in: PlanInput{Pod: one, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{running(one, "c1", "app", "s1", 0, at(0))}},
			want: []string{},
		},
		{
			name: "container exited, Always, first exit: restarted at once",
			in: PlanInput{Pod: one, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{exited(one, "c1", "app", "s1", 0, 1, at(0), at(5))}, Now: at(5)},
			want: []string{"StartContainer container[0] app attempt=1"},
		},
		{
			name: "container exited again within its back-off: CrashLoopBackOff",
			in: PlanInput{Pod: one, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{
					exited(one, "c1", "app", "s1", 0, 1, at(0), at(5)),
					exited(one, "c2", "app", "s1", 1, 1, at(5), at(7)),
				},
				Backoff: map[string]BackoffEntry{"app": {Exit: at(5)}}, Now: at(8)},
			want:        []string{"RemoveContainer app c1"},
			wantWaiting: map[string]string{"app": "CrashLoopBackOff"},
			wantRetry:   at(17),
		},
		{
			name: "back-off over: restarted, oldest exited container removed",
			in: PlanInput{Pod: one, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{
					exited(one, "c1", "app", "s1", 0, 1, at(0), at(5)),
					exited(one, "c2", "app", "s1", 1, 1, at(5), at(7)),
				},
				Backoff: map[string]BackoffEntry{"app": {Exit: at(7), Delay: 10 * time.Second}}, Now: at(17)},
			want: []string{"StartContainer container[0] app attempt=2", "RemoveContainer app c1"},
		},
		{
			name: "exit 0 under Always: restarted",
			in: PlanInput{Pod: one, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{exited(one, "c1", "app", "s1", 0, 0, at(0), at(5))}, Now: at(5)},
			want: []string{"StartContainer container[0] app attempt=1"},
		},
		{
			name: "OnFailure: the failed container restarts, the succeeded one does not",
			in: PlanInput{Pod: onFailure, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{
					exited(onFailure, "c1", "a", "s1", 0, 0, at(0), at(5)),
					exited(onFailure, "c2", "b", "s1", 0, 2, at(0), at(5)),
				}, Now: at(5)},
			want: []string{"StartContainer container[1] b attempt=1"},
		},
		{
			name: "OnFailure, all succeeded: finished",
			in: PlanInput{Pod: onFailure, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{
					exited(onFailure, "c1", "a", "s1", 0, 0, at(0), at(5)),
					exited(onFailure, "c2", "b", "s1", 3, 0, at(0), at(5)),
				}, Now: at(5)},
			want:         []string{"StopSandbox s1"},
			wantFinished: true,
		},
		{
			name: "Never: a failed container finishes the pod",
			in: PlanInput{Pod: never, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{exited(never, "c1", "app", "s1", 0, 1, at(0), at(5))}, Now: at(5)},
			want:         []string{"StopSandbox s1"},
			wantFinished: true,
		},
		{
			name: "liveness failure: killed with the pod's grace and preStop, restarted",
			in: PlanInput{Pod: preStop(liveness(testPod("app"), nil)), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{running(nil, "c1", "app", "s1", 0, at(0))},
				Probes:     map[string]ContainerProbes{"c1": {Liveness: ProbeFailure}}},
			want: []string{"KillContainer app c1 grace=30s reason=LivenessProbeFailed preStop", "StartContainer container[0] app attempt=1"},
		},
		{
			name: "liveness failure with the probe's grace period, Never: killed only",
			in: PlanInput{Pod: withPolicy(liveness(testPod("app"), ptr[int64](5)), corev1.RestartPolicyNever), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{running(nil, "c1", "app", "s1", 0, at(0))},
				Probes:     map[string]ContainerProbes{"c1": {Liveness: ProbeFailure}}},
			want: []string{"KillContainer app c1 grace=5s reason=LivenessProbeFailed"},
		},
		{
			name: "liveness failure of a container without liveness probe: ignored",
			in: PlanInput{Pod: one, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{running(one, "c1", "app", "s1", 0, at(0))},
				Probes:     map[string]ContainerProbes{"c1": {Liveness: ProbeFailure}}},
			want: []string{},
		},
		{
			name: "spec changed (image): replaced even under Never",
			in: PlanInput{Pod: withPolicy(changed, corev1.RestartPolicyNever), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{changedRunning}},
			want: []string{"KillContainer app c1 grace=30s reason=SpecChanged", "StartContainer container[0] app attempt=1"},
		},
		{
			name: "created but never started: removed and replaced",
			in: PlanInput{Pod: one, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{{ID: "c1", SandboxID: "s1", Name: "app", State: runtime.ContainerCreated, CreatedAt: at(0)}}},
			want: []string{"RemoveContainer app c1", "StartContainer container[0] app attempt=1"},
		},
		{
			name: "unknown state: killed and replaced",
			in: PlanInput{Pod: one, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{{ID: "c1", SandboxID: "s1", Name: "app", State: runtime.ContainerUnknown, CreatedAt: at(0)}}},
			want: []string{"KillContainer app c1 grace=30s reason=UnknownState", "StartContainer container[0] app attempt=1"},
		},
		{
			name: "sandbox died: containers killed, new sandbox, all restart",
			in: PlanInput{Pod: two, Sandboxes: []runtime.Sandbox{dead("s1", at(0))},
				Containers: []runtime.Container{
					running(two, "c1", "a", "s1", 0, at(0)),
					exited(two, "c2", "b", "s1", 0, 137, at(0), at(9)),
				}, Now: at(10)},
			want: []string{"KillContainer a c1 grace=30s reason=SandboxChanged", "CreateSandbox",
				"StartContainer container[0] a attempt=1", "StartContainer container[1] b attempt=1"},
		},
		{
			name: "sandbox died, OnFailure: succeeded containers stay",
			in: PlanInput{Pod: onFailure, Sandboxes: []runtime.Sandbox{dead("s1", at(0))},
				Containers: []runtime.Container{
					exited(onFailure, "c1", "a", "s1", 0, 0, at(0), at(9)),
					exited(onFailure, "c2", "b", "s1", 0, 137, at(0), at(9)),
				}, Now: at(10)},
			want: []string{"CreateSandbox", "StartContainer container[1] b attempt=1"},
		},
		{
			name: "sandbox died under Never after containers ran: no new sandbox",
			in: PlanInput{Pod: never, Sandboxes: []runtime.Sandbox{dead("s1", at(0))},
				Containers: []runtime.Container{running(never, "c1", "app", "s1", 0, at(0))}, Now: at(10)},
			want: []string{"KillContainer app c1 grace=30s reason=SandboxChanged"},
		},
		{
			name: "new sandbox after a dead one: init containers run again, old sandbox kept for logs",
			in: PlanInput{Pod: inits, Sandboxes: []runtime.Sandbox{dead("s1", at(0)), ready("s2")},
				Containers: []runtime.Container{
					exited(inits, "c1", "i0", "s1", 0, 0, at(0), at(1)),
					exited(inits, "c2", "i1", "s1", 0, 0, at(1), at(2)),
					exited(inits, "c3", "app", "s1", 0, 137, at(2), at(9)),
				}, Now: at(10)},
			want: []string{"StartContainer init[0] i0 attempt=1"},
		},
		{
			name: "a second ready sandbox is stopped with its containers",
			in: PlanInput{Pod: one, Sandboxes: []runtime.Sandbox{ready("s1"), func() runtime.Sandbox { s := ready("s0"); s.CreatedAt = at(-60); return s }()},
				Containers: []runtime.Container{running(one, "c1", "app", "s1", 1, at(0)), running(one, "c0", "app", "s0", 0, at(-60))}},
			want: []string{"KillContainer app c0 grace=30s reason=SandboxChanged", "StopSandbox s0"},
		},
		{
			name: "dead containers beyond the newest and the newest exited are removed",
			in: PlanInput{Pod: one, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{
					exited(one, "c0", "app", "s1", 0, 1, at(0), at(1)),
					exited(one, "c1", "app", "s1", 1, 1, at(1), at(2)),
					exited(one, "c2", "app", "s1", 2, 1, at(2), at(3)),
					running(one, "c3", "app", "s1", 3, at(100)),
				}, Now: at(101)},
			want: []string{"RemoveContainer app c1", "RemoveContainer app c0"},
		},
		{
			name: "containers the spec does not know are killed and removed",
			in: PlanInput{Pod: one, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{
					running(one, "c1", "app", "s1", 0, at(0)),
					running(nil, "x1", "ghost", "s1", 0, at(0)),
				}},
			want: []string{"KillContainer ghost x1 grace=30s reason=NotInSpec"},
		},
		{
			name: "dead containers the spec does not know are removed, and then their dead sandbox",
			in: PlanInput{Pod: one, Sandboxes: []runtime.Sandbox{ready("s1"), dead("s0", at(-100))},
				Containers: []runtime.Container{
					running(one, "c1", "app", "s1", 0, at(0)),
					exited(nil, "x1", "ghost", "s1", 0, 0, at(0), at(1)),
					exited(nil, "x0", "ghost", "s0", 0, 0, at(-100), at(-50)),
				}},
			want: []string{"RemoveContainer ghost x1", "RemoveContainer ghost x0", "RemoveSandbox s0"},
		},
		{
			name: "deleted: kill with the deletion grace and preStop, stop, remove, delete",
			in: PlanInput{Pod: deleted(preStop(testPod("app", "side")), ptr[int64](7)), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{
					running(nil, "c1", "app", "s1", 0, at(0)),
					exited(nil, "c0", "side", "s1", 0, 0, at(0), at(1)),
				}},
			want: []string{"KillContainer app c1 grace=7s reason=PodTerminating preStop", "StopSandbox s1",
				"RemoveContainer app c1", "RemoveContainer side c0", "RemoveSandbox s1", "DeletePod"},
			wantFinished: true,
		},
		{
			name: "deleted without deletion grace: the spec's",
			in: PlanInput{Pod: func() *corev1.Pod {
				p := deleted(testPod("app"), nil)
				p.Spec.TerminationGracePeriodSeconds = ptr[int64](3)
				return p
			}(), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{running(nil, "c1", "app", "s1", 0, at(0))}},
			want: []string{"KillContainer app c1 grace=3s reason=PodTerminating", "StopSandbox s1",
				"RemoveContainer app c1", "RemoveSandbox s1", "DeletePod"},
			wantFinished: true,
		},
		{
			name:         "deleted before anything ran: delete at once",
			in:           PlanInput{Pod: deleted(testPod("app"), ptr[int64](30))},
			want:         []string{"DeletePod"},
			wantFinished: true,
		},
		{
			name: "deleted with a sidecar: the sidecar stops after the main container",
			in: PlanInput{Pod: deleted(withSidecar(testPod("app"), "proxy"), ptr[int64](10)), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{
					running(nil, "c0", "proxy", "s1", 0, at(0)),
					running(nil, "c1", "app", "s1", 0, at(1)),
				}},
			want: []string{"KillContainer app c1 grace=10s reason=PodTerminating", "KillContainer proxy c0 grace=10s reason=PodTerminating sidecar",
				"StopSandbox s1", "RemoveContainer app c1", "RemoveContainer proxy c0", "RemoveSandbox s1", "DeletePod"},
			wantFinished: true,
		},
		{
			name: "orphan: torn down, not deleted",
			in: PlanInput{Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{running(nil, "c1", "app", "s1", 0, at(0))}},
			want:         []string{"KillContainer app c1 grace=0s reason=PodTerminating", "StopSandbox s1", "RemoveContainer app c1", "RemoveSandbox s1"},
			wantFinished: true,
		},
		{
			name: "reported Succeeded: never restarted",
			in: PlanInput{Pod: started(testPod("app"), corev1.PodSucceeded, 0, nil), Sandboxes: []runtime.Sandbox{dead("s1", at(0))},
				Containers: []runtime.Container{exited(nil, "c1", "app", "s1", 0, 0, at(0), at(5))}, Now: at(9)},
			want:         []string{},
			wantFinished: true,
		},
		{
			name: "active deadline exceeded: everything stopped",
			in: PlanInput{Pod: started(testPod("app"), corev1.PodRunning, 0, ptr[int64](60)), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{running(nil, "c1", "app", "s1", 0, at(0))}, Now: at(60)},
			want:         []string{"KillContainer app c1 grace=30s reason=PodFinished", "StopSandbox s1"},
			wantFinished: true,
		},
		{
			name: "active deadline ahead: retry then",
			in: PlanInput{Pod: started(testPod("app"), corev1.PodRunning, 0, ptr[int64](60)), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{running(nil, "c1", "app", "s1", 0, at(0))}, Now: at(30)},
			want:      []string{},
			wantRetry: at(60),
		},
		{
			name: "containers removed from the runtime: attempt continues from the status",
			in: PlanInput{Pod: func() *corev1.Pod {
				p := testPod("app")
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", ContainerID: "containerd://old", RestartCount: 4}}
				return p
			}(), Sandboxes: []runtime.Sandbox{ready("s1")}},
			want: []string{"StartContainer container[0] app attempt=5"},
		},
		{
			name: "init container failing again within its back-off: waits",
			in: PlanInput{Pod: inits, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{exited(inits, "c1", "i0", "s1", 1, 1, at(0), at(1))},
				Backoff:    map[string]BackoffEntry{"i0": {Exit: at(-5)}}, Now: at(2)},
			want:        []string{},
			wantWaiting: map[string]string{"i0": "CrashLoopBackOff"},
			wantRetry:   at(11),
		},
		{
			name: "sidecar liveness failure: replaced",
			in: PlanInput{Pod: func() *corev1.Pod {
				p := withSidecar(testPod("app"), "proxy")
				p.Spec.InitContainers[0].LivenessProbe = &corev1.Probe{}
				return p
			}(), Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{running(nil, "c0", "proxy", "s1", 0, at(0)), running(nil, "c1", "app", "s1", 0, at(0))},
				Probes:     map[string]ContainerProbes{"c0": {Liveness: ProbeFailure}}},
			want: []string{"KillContainer proxy c0 grace=30s reason=LivenessProbeFailed sidecar", "StartContainer init[0] proxy attempt=1"},
		},
		{
			name: "sidecar: started first",
			in:   PlanInput{Pod: withSidecar(testPod("app"), "proxy")},
			want: []string{"CreateSandbox", "StartContainer init[0] proxy attempt=0"},
		},
		{
			name: "sidecar running, startup probe pending: containers wait",
			in: PlanInput{Pod: sidecar, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{running(sidecar, "c0", "proxy", "s1", 0, at(0))}},
			want: []string{},
		},
		{
			name: "sidecar started: containers start",
			in: PlanInput{Pod: sidecar, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{running(sidecar, "c0", "proxy", "s1", 0, at(0))},
				Probes:     map[string]ContainerProbes{"c0": {Startup: ProbeSuccess}}},
			want: []string{"StartContainer container[0] app attempt=0"},
		},
		{
			name: "sidecar exited after initialization: restarted even under Never",
			in: PlanInput{Pod: sidecarNever, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{
					exited(sidecarNever, "c0", "proxy", "s1", 0, 1, at(0), at(5)),
					running(sidecarNever, "c1", "app", "s1", 0, at(1)),
				}, Now: at(5)},
			want: []string{"StartContainer init[0] proxy attempt=1"},
		},
		{
			name: "main container done under Never: the sidecar is stopped",
			in: PlanInput{Pod: sidecarNever, Sandboxes: []runtime.Sandbox{ready("s1")},
				Containers: []runtime.Container{
					running(sidecarNever, "c0", "proxy", "s1", 0, at(0)),
					exited(sidecarNever, "c1", "app", "s1", 0, 0, at(1), at(5)),
				}, Now: at(5)},
			want:         []string{"KillContainer proxy c0 grace=30s reason=PodFinished sidecar", "StopSandbox s1"},
			wantFinished: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.in.Now.IsZero() {
				tc.in.Now = at(1)
			}
			p := Compute(tc.in)
			if got := actionStrings(p); !slices.Equal(got, tc.want) {
				t.Errorf("actions:\n got %q\nwant %q", got, tc.want)
			}
			gotWaiting := map[string]string{}
			for n, w := range p.Waiting {
				gotWaiting[n] = w.Reason
			}
			if len(gotWaiting) != len(tc.wantWaiting) {
				t.Errorf("waiting = %v, want %v", gotWaiting, tc.wantWaiting)
			}
			for n, r := range tc.wantWaiting {
				if gotWaiting[n] != r {
					t.Errorf("waiting[%s] = %q, want %q", n, gotWaiting[n], r)
				}
			}
			if !p.RetryAt.Equal(tc.wantRetry) {
				t.Errorf("RetryAt = %v, want %v", p.RetryAt, tc.wantRetry)
			}
			if p.Finished != tc.wantFinished {
				t.Errorf("Finished = %v, want %v", p.Finished, tc.wantFinished)
			}
		})
	}
}

func TestComputeCrashLoopMessage(t *testing.T) {
	t.Parallel()
	p := testPod("app")
	in := PlanInput{Pod: p, Sandboxes: []runtime.Sandbox{ready("s1")},
		Containers: []runtime.Container{exited(p, "c2", "app", "s1", 1, 1, at(5), at(7))},
		Backoff:    map[string]BackoffEntry{"app": {Exit: at(5), Delay: 10 * time.Second}}, Now: at(8)}
	plan := Compute(in)
	want := "back-off 20s restarting failed container=app pod=web_ns(uid-1)"
	if got := plan.Waiting["app"].Message; got != want {
		t.Fatalf("message = %q, want %q", got, want)
	}
	if got := plan.Backoff["app"]; !got.Exit.Equal(at(7)) || got.Delay != 20*time.Second {
		t.Fatalf("backoff = %+v, want exit at 7s delay 20s", got)
	}
	// The input map is not modified.
	if in.Backoff["app"].Delay != 10*time.Second {
		t.Fatalf("Compute modified its input backoff: %+v", in.Backoff)
	}
	// Computing again at the same time decides the same.
	again := Compute(PlanInput{Pod: p, Sandboxes: in.Sandboxes, Containers: in.Containers, Backoff: plan.Backoff, Now: at(9)})
	if len(again.Actions) != 0 || !again.RetryAt.Equal(at(27)) {
		t.Fatalf("second compute: actions %v retry %v, want none and %v", actionStrings(again), again.RetryAt, at(27))
	}
}

// TestBackoffSequence drives a container that crashes right after each
// start through the planner and checks the waits between restarts: 0, then
// 10s doubling to the 5m cap, and a reset after a 10-minute run.
func TestBackoffSequence(t *testing.T) {
	t.Parallel()
	p := testPod("app")
	sb := []runtime.Sandbox{ready("s1")}
	now := t0
	var backoff map[string]BackoffEntry
	var waits []time.Duration
	attempt := 0
	var runFor time.Duration
	for i := 0; i < 10; i++ {
		runFor = time.Second
		if i == 8 {
			runFor = 11 * time.Minute
		}
		// The container of attempt runs for runFor and exits 1.
		c := exited(p, "c"+strings.Repeat("x", attempt), "app", "s1", attempt, 1, now, now.Add(runFor))
		exitAt := now.Add(runFor)
		now = exitAt
		for {
			plan := Compute(PlanInput{Pod: p, Sandboxes: sb, Containers: []runtime.Container{c}, Backoff: backoff, Now: now})
			backoff = plan.Backoff
			if len(plan.Actions) > 0 {
				if plan.Actions[0].Kind != StartContainer || plan.Actions[0].Attempt != attempt+1 {
					t.Fatalf("exit %d: actions %v", i, actionStrings(plan))
				}
				break
			}
			if plan.RetryAt.IsZero() || !plan.RetryAt.After(now) {
				t.Fatalf("exit %d: no action and no retry time (%v)", i, plan.RetryAt)
			}
			now = plan.RetryAt
		}
		waits = append(waits, now.Sub(exitAt))
		attempt++
	}
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 300 * time.Second, 300 * time.Second, 0, 10 * time.Second}
	if !slices.Equal(waits, want) {
		t.Fatalf("waits = %v, want %v", waits, want)
	}
}

package pods

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// sync plans a pod that is neither deleted nor finished: its sandbox, then
// its init containers one at a time, then its sidecars and containers.
func (pl *planner) sync() {
	pod, o := pl.pod, pl.o
	grace := gracePeriod(pod)
	if o.current == nil {
		// No ready sandbox: the sandbox died (or never existed). A pod that
		// must not restart and has run containers is not given a new one.
		for _, c := range pl.killOrder() {
			pl.kill(c, grace, KillSandboxChanged, "Pod sandbox changed, it will be killed and re-created.")
		}
		if len(o.sandboxes) > 0 && restartPolicy(pod) == corev1.RestartPolicyNever && len(o.all) > 0 {
			return
		}
		pl.plan.add(Action{Kind: CreateSandbox})
	} else {
		pl.sandbox = o.current.ID
		// Containers outside the current sandbox, or that the spec does not
		// know, must go; so must other ready sandboxes.
		for _, c := range pl.killOrder() {
			if s, _ := pl.spec(c.Name); s == nil {
				pl.kill(c, grace, KillNotInSpec, stopMessage(c.Name))
			} else if c.SandboxID != o.current.ID {
				pl.kill(c, grace, KillSandboxChanged, stopMessage(c.Name))
			}
		}
		for _, s := range o.sandboxes {
			if s.State == runtime.SandboxReady && s.ID != o.current.ID {
				pl.plan.add(Action{Kind: StopSandbox, SandboxID: s.ID})
			}
		}
	}
	if !pl.initialized() && !pl.syncInit() {
		return
	}
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			pl.ensure(&pod.Spec.InitContainers[i], true, i, corev1.RestartPolicyAlways)
		}
	}
	for i := range pod.Spec.Containers {
		pl.ensure(&pod.Spec.Containers[i], false, i, restartPolicy(pod))
	}
}

// inSandbox returns the newest container named name in the sandbox
// containers start in, or nil.
func (pl *planner) inSandbox(name string) *runtime.Container {
	if pl.sandbox == "" {
		return nil
	}
	return pl.o.latestInCurrent(name)
}

// initialized reports whether the current sandbox already has a regular
// container, which means its init containers completed.
func (pl *planner) initialized() bool {
	for i := range pl.pod.Spec.Containers {
		if pl.inSandbox(pl.pod.Spec.Containers[i].Name) != nil {
			return true
		}
	}
	return false
}

// syncInit runs the init containers in order and reports whether all are
// done (sidecars: started).
func (pl *planner) syncInit() bool {
	pod := pl.pod
	for i := range pod.Spec.InitContainers {
		spec := &pod.Spec.InitContainers[i]
		if isSidecar(spec) {
			c := pl.inSandbox(spec.Name)
			if c != nil && c.State == runtime.ContainerRunning {
				pl.ensure(spec, true, i, corev1.RestartPolicyAlways)
				if pl.handled[c.ID] || !pl.started(spec, c) {
					return false
				}
				continue
			}
			pl.ensure(spec, true, i, corev1.RestartPolicyAlways)
			return false
		}
		c := pl.inSandbox(spec.Name)
		if c != nil && c.State == runtime.ContainerExited && c.ExitCode == 0 {
			continue
		}
		// An init container that failed under restartPolicy Never fails
		// the pod: terminalPhase caught that before sync.
		pl.ensure(spec, true, i, restartPolicy(pod))
		return false
	}
	return true
}

// started reports whether c passed its startup probe (or has none).
func (pl *planner) started(spec *corev1.Container, c *runtime.Container) bool {
	return spec.StartupProbe == nil || pl.probes[c.ID].Startup == ProbeSuccess
}

// killReason says why a running container must be replaced, "" if it need
// not be, and the grace period it gets.
func (pl *planner) killReason(spec *corev1.Container, c *runtime.Container) (reason, msg string, grace time.Duration) {
	grace = gracePeriod(pl.pod)
	probeGrace := func(p *corev1.Probe) time.Duration {
		if p.TerminationGracePeriodSeconds != nil {
			return time.Duration(*p.TerminationGracePeriodSeconds) * time.Second
		}
		return grace
	}
	r := pl.probes[c.ID]
	switch {
	case c.Labels[runtime.LabelHash] != "" && c.Labels[runtime.LabelHash] != ContainerHash(spec):
		return KillSpecChanged, fmt.Sprintf("Container %s definition changed", spec.Name), grace
	case spec.StartupProbe != nil && r.Startup == ProbeFailure:
		return KillStartupFailed, fmt.Sprintf("Container %s failed startup probe", spec.Name), probeGrace(spec.StartupProbe)
	case spec.LivenessProbe != nil && r.Liveness == ProbeFailure:
		return KillLivenessFailed, fmt.Sprintf("Container %s failed liveness probe", spec.Name), probeGrace(spec.LivenessProbe)
	}
	return "", "", 0
}

// ensure keeps one container of the spec running as policy asks: it
// replaces a running container that must go, starts a missing one, and
// restarts an exited one after its back-off.
func (pl *planner) ensure(spec *corev1.Container, init bool, index int, policy corev1.RestartPolicy) {
	start := func() {
		pl.plan.add(Action{Kind: StartContainer, Container: spec.Name, Init: init, Index: index,
			Attempt: pl.o.nextAttempt(pl.pod, spec.Name)})
	}
	last := pl.o.latest(spec.Name)
	c := pl.inSandbox(spec.Name)
	switch {
	case c == nil:
		// Not in this sandbox: first start, or the sandbox was re-created.
		// Init containers run again in a new sandbox; regular containers
		// that may not restart stay as they ended.
		if last != nil && last.State == runtime.ContainerExited {
			if !init && !shouldRestart(policy, last.ExitCode) {
				return
			}
			if !pl.plan.backoff(pl.pod, spec.Name, last, pl.now) {
				return
			}
		}
		start()
	case c.State == runtime.ContainerRunning:
		reason, msg, grace := pl.killReason(spec, c)
		if reason == "" {
			return
		}
		// A changed spec restarts whatever the policy.
		if policy != corev1.RestartPolicyNever || reason == KillSpecChanged {
			pl.kill(*c, grace, reason, msg+", will be restarted")
			start()
			return
		}
		pl.kill(*c, grace, reason, msg)
	case c.State == runtime.ContainerUnknown:
		pl.kill(*c, gracePeriod(pl.pod), KillUnknownState, "Container is in unknown state, try killing it")
		start()
	case c.State == runtime.ContainerCreated:
		// Created but never started (a start that failed): replace it.
		pl.remove(*c)
		start()
	default: // exited
		if !shouldRestart(policy, c.ExitCode) {
			return
		}
		if !pl.plan.backoff(pl.pod, spec.Name, last, pl.now) {
			return
		}
		start()
	}
}

// gc removes dead containers beyond the newest one and the newest exited
// one of each name (kept for `kubectl logs --previous`), dead containers
// the spec does not know, and dead sandboxes that hold no container any
// more.
func (pl *planner) gc() {
	kept := map[string]int{} // sandbox ID -> containers kept in it
	for _, name := range sortedKeys(pl.o.byName) {
		exitedKept := false
		// Dead containers of names the spec does not know all go.
		known, _ := pl.spec(name)
		for i, c := range pl.o.byName[name] {
			keep := alive(c) || (known != nil && (i == 0 || (c.State == runtime.ContainerExited && !exitedKept)))
			if pl.handled[c.ID] && !alive(c) {
				keep = false // removed already
			}
			if c.State == runtime.ContainerExited && keep {
				exitedKept = true
			}
			if keep {
				kept[c.SandboxID]++
				continue
			}
			pl.remove(c)
		}
	}
	for _, s := range pl.o.sandboxes {
		if s.State != runtime.SandboxReady && kept[s.ID] == 0 {
			pl.plan.add(Action{Kind: RemoveSandbox, SandboxID: s.ID})
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sortBySpec orders cs by the position of their names in specs (reversed
// when reverse is set), stably.
func sortBySpec(cs []runtime.Container, specs []corev1.Container, reverse bool) {
	pos := map[string]int{}
	for i, s := range specs {
		pos[s.Name] = i
	}
	slices.SortStableFunc(cs, func(a, b runtime.Container) int {
		d := pos[a.Name] - pos[b.Name]
		if reverse {
			d = -d
		}
		return d
	})
}

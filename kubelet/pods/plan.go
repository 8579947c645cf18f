package pods

import (
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// DefaultGracePeriod is the grace period of a pod that sets none.
const DefaultGracePeriod = 30 * time.Second

// MinStopGrace is the least time a container gets between the stop signal
// and SIGKILL, whatever its grace period (upstream's
// minimumGracePeriodInSeconds). The plan reports the grace period as the
// pod asks; the caller applies this floor after running the preStop hook.
const MinStopGrace = 2 * time.Second

// Waiting reasons the plan reports.
const (
	ReasonCrashLoopBackOff = "CrashLoopBackOff"
)

// ActionKind says what an Action does.
type ActionKind int

// Action kinds.
const (
	// CreateSandbox creates the pod's sandbox. The StartContainer actions
	// after it run in the new sandbox.
	CreateSandbox ActionKind = iota + 1
	// StartContainer creates and starts the container at Index of
	// Spec.InitContainers (Init) or Spec.Containers, with Attempt, in the
	// sandbox created earlier in the plan or else Plan.SandboxID.
	StartContainer
	// KillContainer stops ContainerID: run PreStop (when set and
	// GracePeriod > 0), send the stop signal, SIGKILL after what is left of
	// GracePeriod (at least MinStopGrace). Consecutive KillContainer actions
	// may run concurrently, except that a Sidecar is killed only after the
	// non-sidecars before it have stopped.
	KillContainer
	// RemoveContainer deletes the exited or created ContainerID.
	RemoveContainer
	// StopSandbox stops SandboxID (tears its network down).
	StopSandbox
	// RemoveSandbox deletes SandboxID.
	RemoveSandbox
	// DeletePod: the pod is deleted and nothing of it is left in the
	// runtime; clean its volumes up and delete it from the API for good.
	DeletePod
)

func (k ActionKind) String() string {
	switch k {
	case CreateSandbox:
		return "CreateSandbox"
	case StartContainer:
		return "StartContainer"
	case KillContainer:
		return "KillContainer"
	case RemoveContainer:
		return "RemoveContainer"
	case StopSandbox:
		return "StopSandbox"
	case RemoveSandbox:
		return "RemoveSandbox"
	case DeletePod:
		return "DeletePod"
	default:
		return fmt.Sprintf("ActionKind(%d)", int(k))
	}
}

// Reasons for KillContainer, in Action.Reason.
const (
	KillLivenessFailed = "LivenessProbeFailed"
	KillStartupFailed  = "StartupProbeFailed"
	KillSpecChanged    = "SpecChanged"
	KillUnknownState   = "UnknownState"
	KillSandboxChanged = "SandboxChanged"
	KillPodTerminating = "PodTerminating"
	KillPodFinished    = "PodFinished"
	KillNotInSpec      = "NotInSpec"
)

// Action is one step of a Plan. Which fields matter depends on Kind.
type Action struct {
	Kind ActionKind
	// Container is the container's name.
	Container string
	// Init and Index locate the container in the pod's spec
	// (StartContainer).
	Init  bool
	Index int
	// Attempt is the restart count of the container to start.
	Attempt     int
	ContainerID string
	SandboxID   string
	// GracePeriod, PreStop and Sidecar are for KillContainer.
	GracePeriod time.Duration
	PreStop     *corev1.LifecycleHandler
	Sidecar     bool
	// Reason (CamelCase) and Message say why, for logs and events.
	Reason, Message string
}

// String describes the action in one line, for logs and tests.
func (a Action) String() string {
	var b strings.Builder
	b.WriteString(a.Kind.String())
	switch a.Kind {
	case StartContainer:
		kind := "container"
		if a.Init {
			kind = "init"
		}
		fmt.Fprintf(&b, " %s[%d] %s attempt=%d", kind, a.Index, a.Container, a.Attempt)
	case KillContainer:
		fmt.Fprintf(&b, " %s %s grace=%s reason=%s", a.Container, a.ContainerID, a.GracePeriod, a.Reason)
		if a.PreStop != nil {
			b.WriteString(" preStop")
		}
		if a.Sidecar {
			b.WriteString(" sidecar")
		}
	case RemoveContainer:
		fmt.Fprintf(&b, " %s %s", a.Container, a.ContainerID)
	case StopSandbox, RemoveSandbox:
		fmt.Fprintf(&b, " %s", a.SandboxID)
	}
	return b.String()
}

// Waiting is why a container is not running, for its status.
type Waiting struct {
	Reason, Message string
}

// PlanInput is what Compute decides from.
type PlanInput struct {
	// Pod is the desired pod; nil when it is gone from the API, which
	// makes its sandboxes and containers orphans to tear down.
	Pod *corev1.Pod
	// Sandboxes and Containers are what the runtime reports for the pod.
	Sandboxes  []runtime.Sandbox
	Containers []runtime.Container
	// Backoff is the previous Plan.Backoff of the pod (nil at first).
	Backoff map[string]BackoffEntry
	// Probes holds probe results by container ID.
	Probes map[string]ContainerProbes
	Now    time.Time
}

// Plan is what to do with a pod now.
type Plan struct {
	// Actions, to run in order; stop at the first failure.
	Actions []Action
	// SandboxID is the current ready sandbox ("" when there is none).
	SandboxID string
	// Waiting holds why some containers wait (crash-loop back-off), by name.
	Waiting map[string]Waiting
	// Backoff is the back-off state to pass to the next Compute.
	Backoff map[string]BackoffEntry
	// RetryAt, when not zero, is when to compute the plan again even if
	// nothing changes (a back-off or the active deadline ends).
	RetryAt time.Time
	// Finished: the pod is deleted, orphaned or has reached its final
	// phase; its containers are not started again.
	Finished bool
}

func (p *Plan) add(a Action) { p.Actions = append(p.Actions, a) }

func (p *Plan) wait(name string, w Waiting, at time.Time) {
	if p.Waiting == nil {
		p.Waiting = map[string]Waiting{}
	}
	p.Waiting[name] = w
	p.retryAt(at)
}

func (p *Plan) retryAt(at time.Time) {
	if p.RetryAt.IsZero() || at.Before(p.RetryAt) {
		p.RetryAt = at
	}
}

// Compute decides what to do with one pod given what the runtime reports.
// It is a pure function of its input.
func Compute(in PlanInput) Plan {
	p := Plan{Backoff: maps.Clone(in.Backoff)}
	if p.Backoff == nil {
		p.Backoff = map[string]BackoffEntry{}
	}
	o := observe(in.Sandboxes, in.Containers)
	pl := planner{plan: &p, pod: in.Pod, o: o, probes: in.Probes, now: in.Now, handled: map[string]bool{}}
	switch {
	case in.Pod == nil:
		p.Finished = true
		pl.teardown(0, KillPodTerminating)
		return p
	case in.Pod.DeletionTimestamp != nil:
		p.Finished = true
		pl.teardown(gracePeriod(in.Pod), KillPodTerminating)
		p.add(Action{Kind: DeletePod})
		return p
	}
	if o.current != nil {
		p.SandboxID = o.current.ID
	}
	if terminalPhase(in.Pod, o, in.Now) {
		p.Finished = true
		pl.stopAll(KillPodFinished)
		pl.gc()
		return p
	}
	if d, ok := activeDeadline(in.Pod); ok {
		p.retryAt(d)
	}
	pl.sync()
	pl.gc()
	return p
}

// planner holds what Compute works on.
type planner struct {
	plan   *Plan
	pod    *corev1.Pod
	o      *observed
	probes map[string]ContainerProbes
	now    time.Time
	// handled holds the IDs of containers killed or removed by the plan.
	handled map[string]bool
	// sandbox is the ID of the sandbox containers start in; "" when the
	// plan creates one.
	sandbox string
}

// gracePeriod is how long the pod's containers get to stop.
func gracePeriod(pod *corev1.Pod) time.Duration {
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	default:
		return DefaultGracePeriod
	}
}

// spec returns the spec of the container named name: regular, init or
// sidecar. Nil when the pod has none.
func (pl *planner) spec(name string) (c *corev1.Container, init bool) {
	if pl.pod == nil {
		return nil, false
	}
	for i := range pl.pod.Spec.Containers {
		if pl.pod.Spec.Containers[i].Name == name {
			return &pl.pod.Spec.Containers[i], false
		}
	}
	for i := range pl.pod.Spec.InitContainers {
		if pl.pod.Spec.InitContainers[i].Name == name {
			return &pl.pod.Spec.InitContainers[i], true
		}
	}
	return nil, false
}

// kill adds a KillContainer of c, once.
func (pl *planner) kill(c runtime.Container, grace time.Duration, reason, msg string) {
	if pl.handled[c.ID] {
		return
	}
	pl.handled[c.ID] = true
	a := Action{Kind: KillContainer, Container: c.Name, ContainerID: c.ID, GracePeriod: grace, Reason: reason, Message: msg}
	if s, init := pl.spec(c.Name); s != nil {
		if s.Lifecycle != nil {
			a.PreStop = s.Lifecycle.PreStop
		}
		a.Sidecar = init && isSidecar(s)
	}
	pl.plan.add(a)
}

// remove adds a RemoveContainer of c, once.
func (pl *planner) remove(c runtime.Container) {
	if pl.handled[c.ID] {
		return
	}
	pl.handled[c.ID] = true
	pl.plan.add(Action{Kind: RemoveContainer, Container: c.Name, ContainerID: c.ID})
}

// killOrder returns the alive containers in the order they are stopped:
// regular containers in spec order, then containers the spec does not
// know, then sidecars in reverse spec order.
func (pl *planner) killOrder() []runtime.Container {
	var regular, unknown, sidecars []runtime.Container
	for _, c := range pl.o.all {
		if !alive(c) {
			continue
		}
		switch s, init := pl.spec(c.Name); {
		case s == nil:
			unknown = append(unknown, c)
		case init && isSidecar(s):
			sidecars = append(sidecars, c)
		default:
			regular = append(regular, c)
		}
	}
	if pl.pod != nil {
		sortBySpec(regular, pl.pod.Spec.Containers, false)
		sortBySpec(sidecars, pl.pod.Spec.InitContainers, true)
	}
	return append(append(regular, unknown...), sidecars...)
}

// stopMessage is upstream's event message for a stopped container.
func stopMessage(name string) string { return fmt.Sprintf("Stopping container %s", name) }

// teardown stops and removes everything the runtime holds of the pod.
func (pl *planner) teardown(grace time.Duration, reason string) {
	for _, c := range pl.killOrder() {
		pl.kill(c, grace, reason, stopMessage(c.Name))
	}
	for _, s := range pl.o.sandboxes {
		if s.State == runtime.SandboxReady {
			pl.plan.add(Action{Kind: StopSandbox, SandboxID: s.ID})
		}
	}
	for _, c := range pl.o.all {
		pl.plan.add(Action{Kind: RemoveContainer, Container: c.Name, ContainerID: c.ID})
	}
	for _, s := range pl.o.sandboxes {
		pl.plan.add(Action{Kind: RemoveSandbox, SandboxID: s.ID})
	}
}

// stopAll stops every container and sandbox of a finished pod, keeping
// them for their logs.
func (pl *planner) stopAll(reason string) {
	grace := gracePeriod(pl.pod)
	for _, c := range pl.killOrder() {
		pl.kill(c, grace, reason, stopMessage(c.Name))
	}
	for _, s := range pl.o.sandboxes {
		if s.State == runtime.SandboxReady {
			pl.plan.add(Action{Kind: StopSandbox, SandboxID: s.ID})
		}
	}
}

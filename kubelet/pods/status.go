package pods

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// Container waiting reasons and condition reasons, as upstream.
const (
	ReasonContainerCreating      = "ContainerCreating"
	ReasonPodInitializing        = "PodInitializing"
	ReasonContainerStatusUnknown = "ContainerStatusUnknown"
	ReasonContainersNotReady     = "ContainersNotReady"
	ReasonContainersNotInit      = "ContainersNotInitialized"
	ReasonPodCompleted           = "PodCompleted"
	ReasonReadinessGatesNotReady = "ReadinessGatesNotReady"
)

// ContainerIDPrefix is the runtime's scheme in status container IDs.
const ContainerIDPrefix = "containerd://"

// StatusInput is what ComputeStatus reports from.
type StatusInput struct {
	Pod *corev1.Pod
	// Sandboxes and Containers are what the runtime reports for the pod.
	Sandboxes  []runtime.Sandbox
	Containers []runtime.Container
	// Probes holds probe results by container ID.
	Probes map[string]ContainerProbes
	// Waiting holds why containers wait, by name: Plan.Waiting and the
	// caller's own start errors (CreateContainerConfigError,
	// ErrImagePull...). It applies only to containers not running.
	Waiting map[string]Waiting
	// HostIPs are the node's addresses (none: the reported ones stay).
	HostIPs []string
	Now     time.Time
}

// ComputeStatus returns the status the kubelet reports for the pod.
// Conditions it does not own are kept, as are startTime, the pod IPs when
// no sandbox is ready, and a final phase once reached. Times are
// truncated to seconds, as the API stores them, so that an unchanged
// status compares equal to the stored one.
func ComputeStatus(in StatusInput) corev1.PodStatus {
	pod := in.Pod
	o := observe(in.Sandboxes, in.Containers)
	now := metav1.NewTime(in.Now.Truncate(time.Second))
	old := &pod.Status
	st := corev1.PodStatus{
		QOSClass:          old.QOSClass,
		NominatedNodeName: old.NominatedNodeName,
		StartTime:         old.StartTime,
		PodIP:             old.PodIP,
		PodIPs:            old.PodIPs,
		HostIP:            old.HostIP,
		HostIPs:           old.HostIPs,
	}
	if st.QOSClass == "" {
		st.QOSClass = QOSClass(pod)
	}
	if st.StartTime == nil {
		st.StartTime = &now
	}
	if len(in.HostIPs) > 0 {
		st.HostIP, st.HostIPs = in.HostIPs[0], nil
		for _, ip := range in.HostIPs {
			st.HostIPs = append(st.HostIPs, corev1.HostIP{IP: ip})
		}
	}
	if o.current != nil && o.current.IP != "" {
		st.PodIP = o.current.IP
		st.PodIPs = []corev1.PodIP{{IP: o.current.IP}}
	}

	b := statusBuilder{in: in, o: o}
	for i := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, b.container(&pod.Spec.InitContainers[i], true))
	}
	for i := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, b.container(&pod.Spec.Containers[i], false))
	}

	switch {
	case isTerminal(old.Phase):
		st.Phase, st.Reason, st.Message = old.Phase, old.Reason, old.Message
	case pod.DeletionTimestamp != nil && !o.running():
		st.Phase = deletedPhase(pod, o)
	case deadlineExceeded(pod, in.Now):
		st.Phase, st.Reason, st.Message = corev1.PodFailed, ReasonDeadlineExceeded, messageDeadlineExceeded
	default:
		st.Phase = podPhase(pod, o)
	}
	st.Conditions = conditions(pod, &st, o, now)
	return st
}

type statusBuilder struct {
	in StatusInput
	o  *observed
}

// container builds the status of the container of the spec.
func (b *statusBuilder) container(spec *corev1.Container, init bool) corev1.ContainerStatus {
	pod := b.in.Pod
	cs := corev1.ContainerStatus{Name: spec.Name, Image: spec.Image, Started: new(bool)}
	list := b.o.byName[spec.Name]
	if old := statusOf(pod, spec.Name); len(list) == 0 && old != nil && old.State.Terminated != nil {
		// As upstream's kubelet: a container that terminated stays as last
		// reported when the runtime no longer has it (removed, or lost with
		// the runtime's state) until a new one is seen, never back to
		// waiting to be created, which the API server refuses for a
		// container its pod does not restart.
		cs = *old.DeepCopy()
		cs.Started = new(bool)
		if w, ok := b.in.Waiting[spec.Name]; ok {
			cs.LastTerminationState = cs.State
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}}
		}
		// An init container that succeeded stays ready, as when seen.
		t := cs.State.Terminated
		cs.Ready = init && !isSidecar(spec) && t != nil && t.ExitCode == 0
		return cs
	}
	if len(list) == 0 {
		reason := ReasonContainerCreating
		if len(pod.Spec.InitContainers) > 0 {
			reason = ReasonPodInitializing
		}
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason}
		if old := statusOf(pod, spec.Name); old != nil {
			cs.RestartCount = old.RestartCount
		}
		if w, ok := b.in.Waiting[spec.Name]; ok {
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
		}
		return cs
	}
	c := list[0]
	cs.ContainerID = ContainerIDPrefix + c.ID
	if c.Image != "" {
		cs.Image = c.Image
	}
	cs.ImageID = c.ImageID
	cs.RestartCount = int32(c.Attempt)
	cs.State = containerState(&c)
	if prev := b.o.previousExited(spec.Name); prev != nil {
		cs.LastTerminationState = containerState(prev)
	}
	succeededInit := init && !isSidecar(spec) && c.State == runtime.ContainerExited && c.ExitCode == 0
	if w, ok := b.in.Waiting[spec.Name]; ok && c.State != runtime.ContainerRunning && !succeededInit {
		if cs.State.Terminated != nil {
			cs.LastTerminationState = cs.State
		}
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}}
	}

	probes := b.in.Probes[c.ID]
	running := c.State == runtime.ContainerRunning
	*cs.Started = running && (spec.StartupProbe == nil || probes.Startup == ProbeSuccess)
	if init && !isSidecar(spec) {
		cs.Ready = succeededInit
	} else {
		cs.Ready = *cs.Started && (spec.ReadinessProbe == nil || probes.Readiness == ProbeSuccess)
	}
	return cs
}

// containerState converts the runtime's state of c.
func containerState(c *runtime.Container) corev1.ContainerState {
	switch c.State {
	case runtime.ContainerRunning:
		return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: apiTime(c.StartedAt)}}
	case runtime.ContainerExited:
		reason := c.Reason
		if reason == "" {
			reason = "Error"
			if c.ExitCode == 0 {
				reason = "Completed"
			}
		}
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: c.ExitCode, Reason: reason, StartedAt: apiTime(c.StartedAt), FinishedAt: apiTime(c.FinishedAt),
			ContainerID: ContainerIDPrefix + c.ID,
		}}
	case runtime.ContainerCreated:
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonContainerCreating}}
	default:
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonContainerStatusUnknown,
			Message: "The container state could not be determined"}}
	}
}

func apiTime(t time.Time) metav1.Time {
	if t.IsZero() {
		return metav1.Time{}
	}
	return metav1.NewTime(t.Truncate(time.Second))
}

// conditions returns the pod's conditions: those the kubelet does not own
// as they were, then PodReadyToStartContainers, Initialized, Ready,
// ContainersReady and PodScheduled.
func conditions(pod *corev1.Pod, st *corev1.PodStatus, o *observed, now metav1.Time) []corev1.PodCondition {
	owned := map[corev1.PodConditionType]bool{
		corev1.PodReadyToStartContainers: true, corev1.PodInitialized: true, corev1.PodReady: true,
		corev1.ContainersReady: true, corev1.PodScheduled: true,
	}
	var out []corev1.PodCondition
	for _, c := range pod.Status.Conditions {
		if !owned[c.Type] {
			out = append(out, c)
		}
	}
	cond := func(t corev1.PodConditionType, ok bool, reason, msg string) corev1.PodCondition {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: msg, LastTransitionTime: now}
		if ok {
			c.Status = corev1.ConditionTrue
		}
		for _, old := range pod.Status.Conditions {
			if old.Type == t && old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		return c
	}

	sandboxReady := o.current != nil && (o.current.IP != "" || pod.Spec.HostNetwork)
	out = append(out, cond(corev1.PodReadyToStartContainers, sandboxReady, "", ""))

	var notInit []string
	for i, spec := range pod.Spec.InitContainers {
		cs := st.InitContainerStatuses[i]
		if (isSidecar(&spec) && !*cs.Started) || (!isSidecar(&spec) && !cs.Ready) {
			notInit = append(notInit, spec.Name)
		}
	}
	for i := range pod.Spec.Containers {
		if o.latest(pod.Spec.Containers[i].Name) != nil {
			notInit = nil // a regular container ran: initialization is over
		}
	}
	switch {
	case len(notInit) == 0 && st.Phase == corev1.PodSucceeded:
		out = append(out, cond(corev1.PodInitialized, true, ReasonPodCompleted, ""))
	case len(notInit) == 0:
		out = append(out, cond(corev1.PodInitialized, true, "", ""))
	default:
		out = append(out, cond(corev1.PodInitialized, false, ReasonContainersNotInit,
			fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(notInit, " "))))
	}

	var unready []string
	for i, spec := range pod.Spec.InitContainers {
		if isSidecar(&spec) && !st.InitContainerStatuses[i].Ready {
			unready = append(unready, spec.Name)
		}
	}
	for _, cs := range st.ContainerStatuses {
		if !cs.Ready {
			unready = append(unready, cs.Name)
		}
	}
	var ready, containersReady corev1.PodCondition
	switch {
	case st.Phase == corev1.PodSucceeded:
		containersReady = cond(corev1.ContainersReady, false, ReasonPodCompleted, "")
		ready = cond(corev1.PodReady, false, ReasonPodCompleted, "")
	case len(unready) > 0:
		msg := fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
		containersReady = cond(corev1.ContainersReady, false, ReasonContainersNotReady, msg)
		ready = cond(corev1.PodReady, false, ReasonContainersNotReady, msg)
	default:
		containersReady = cond(corev1.ContainersReady, true, "", "")
		if msg := readinessGates(pod); msg != "" {
			ready = cond(corev1.PodReady, false, ReasonReadinessGatesNotReady, msg)
		} else {
			ready = cond(corev1.PodReady, true, "", "")
		}
	}
	out = append(out, ready, containersReady)

	scheduled := cond(corev1.PodScheduled, true, "", "")
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			scheduled = c
		}
	}
	return append(out, scheduled)
}

// readinessGates returns why the pod's readiness gates are not all True,
// "" if they are.
func readinessGates(pod *corev1.Pod) string {
	var msgs []string
	for _, g := range pod.Spec.ReadinessGates {
		found := false
		for _, c := range pod.Status.Conditions {
			if c.Type != g.ConditionType {
				continue
			}
			found = true
			if c.Status != corev1.ConditionTrue {
				msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %s", g.ConditionType, c.Status))
			}
		}
		if !found {
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
		}
	}
	return strings.Join(msgs, ", ")
}

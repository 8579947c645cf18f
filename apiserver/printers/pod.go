package printers

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeLostReason is the pod status reason the node lifecycle controller
// sets when the pod's node stops answering.
const nodeLostReason = "NodeLost"

func podColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		column("Ready", "string", "Ready containers out of all containers of the pod."),
		column("Status", "string", "The pod's phase, or what its containers are waiting on or ended with."),
		column("Restarts", "string", "Container restarts of the pod, and how long ago the last one was."),
		ageColumn(),
		wideColumn("IP", "string", corev1.PodStatus{}.SwaggerDoc()["podIP"]),
		wideColumn("Node", "string", corev1.PodSpec{}.SwaggerDoc()["nodeName"]),
		wideColumn("Nominated Node", "string", corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"]),
		wideColumn("Readiness Gates", "string", corev1.PodSpec{}.SwaggerDoc()["readinessGates"]),
	}
}

func podCells(pod *corev1.Pod, now time.Time) []interface{} {
	s := summarizePod(pod)
	restarts := strconv.Itoa(s.restarts)
	if s.restarts != 0 && !s.lastRestart.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", s.restarts, since(s.lastRestart, now))
	}
	ip := pod.Status.PodIP
	if len(pod.Status.PodIPs) > 0 {
		ip = pod.Status.PodIPs[0].IP
	}
	return []interface{}{
		pod.Name,
		fmt.Sprintf("%d/%d", s.ready, s.total),
		s.status,
		restarts,
		age(pod.CreationTimestamp, now),
		orNone(ip),
		orNone(pod.Spec.NodeName),
		orNone(pod.Status.NominatedNodeName),
		readinessGates(pod),
	}
}

// podSummary is what the READY, STATUS and RESTARTS cells show.
type podSummary struct {
	ready, total int
	status       string
	restarts     int
	lastRestart  time.Time
}

// restartTally counts container restarts and remembers the latest one.
type restartTally struct {
	count int
	last  time.Time
}

func (t *restartTally) add(st corev1.ContainerStatus) {
	t.count += int(st.RestartCount)
	if term := st.LastTerminationState.Terminated; term != nil && term.FinishedAt.After(t.last) {
		t.last = term.FinishedAt.Time
	}
}

// summarizePod derives the pod's READY, STATUS and RESTARTS the way kubectl
// users know them: the phase (or status reason) unless an init container is
// still in the way or a container is waiting or has terminated.
func summarizePod(pod *corev1.Pod) podSummary {
	s := podSummary{total: len(pod.Spec.Containers), status: string(pod.Status.Phase)}
	if pod.Status.Reason != "" {
		s.status = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			s.status = corev1.PodReasonSchedulingGated
		}
	}

	// Sidecars (init containers that keep running) count as containers.
	sidecars := map[string]bool{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
			s.total++
		}
	}

	// Walk the init containers up to the first one still in the way.
	var initRestarts, sidecarRestarts restartTally
	initializing := false
	for i, st := range pod.Status.InitContainerStatuses {
		initRestarts.add(st)
		if sidecars[st.Name] {
			sidecarRestarts.add(st)
		}
		if term := st.State.Terminated; term != nil && term.ExitCode == 0 {
			continue
		}
		if sidecars[st.Name] && st.Started != nil && *st.Started {
			if st.Ready {
				s.ready++
			}
			continue
		}
		initializing = true
		switch {
		case st.State.Terminated != nil:
			s.status = "Init:" + terminatedReason(st.State.Terminated)
		case st.State.Waiting != nil && st.State.Waiting.Reason != "" && st.State.Waiting.Reason != "PodInitializing":
			s.status = "Init:" + st.State.Waiting.Reason
		default:
			s.status = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		break
	}

	tally := initRestarts
	if !initializing || podCondition(pod, corev1.PodInitialized) {
		// Past initialization only sidecar restarts still count, plus the
		// regular containers'. The first container's state wins the status.
		tally = sidecarRestarts
		running := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			st := pod.Status.ContainerStatuses[i]
			tally.add(st)
			switch {
			case st.State.Waiting != nil && st.State.Waiting.Reason != "":
				s.status = st.State.Waiting.Reason
			case st.State.Terminated != nil:
				s.status = terminatedReason(st.State.Terminated)
			case st.Ready && st.State.Running != nil:
				running = true
				s.ready++
			}
		}
		// A finished container next to running ones does not make the pod
		// Completed.
		if s.status == "Completed" && running {
			s.status = "NotReady"
			if podCondition(pod, corev1.PodReady) {
				s.status = "Running"
			}
		}
	}
	s.restarts, s.lastRestart = tally.count, tally.last

	if !pod.DeletionTimestamp.IsZero() {
		switch {
		case pod.Status.Reason == nodeLostReason:
			s.status = "Unknown"
		case pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			s.status = "Terminating"
		}
	}
	return s
}

// terminatedReason names how a container ended: its reason, else its
// signal or exit code.
func terminatedReason(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

// podCondition reports whether the pod's first condition of type t is True.
func podCondition(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readinessGates is "true/all" of the pod's readiness gates, or "<none>".
func readinessGates(pod *corev1.Pod) string {
	if len(pod.Spec.ReadinessGates) == 0 {
		return "<none>"
	}
	met := 0
	for _, g := range pod.Spec.ReadinessGates {
		if podCondition(pod, g.ConditionType) {
			met++
		}
	}
	return fmt.Sprintf("%d/%d", met, len(pod.Spec.ReadinessGates))
}

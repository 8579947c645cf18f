package lifecycle

import (
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Step is one step of a pod's way to serving traffic.
type Step string

// The steps, in the order they happen.
const (
	// Created: the pod object exists.
	Created Step = "created"
	// Scheduled: the pod is bound to a node (spec.nodeName is set).
	Scheduled Step = "scheduled"
	// Sandbox: the node made the pod's sandbox and network
	// (PodReadyToStartContainers is True, or the pod has an IP).
	Sandbox Step = "sandbox"
	// Started: every container of the pod has started.
	Started Step = "started"
	// Ready: the pod's Ready condition is True.
	Ready Step = "ready"
	// InEndpoints: an EndpointSlice lists the pod as a ready endpoint.
	InEndpoints Step = "endpoints"
	// Programmed: a node's proxy has programmed rules from a state that
	// includes that EndpointSlice.
	Programmed Step = "programmed"
)

// PodSteps are the steps read from the pod itself, in order.
var PodSteps = []Step{Created, Scheduled, Sandbox, Started, Ready}

// Steps are all the steps, in order.
var Steps = []Step{Created, Scheduled, Sandbox, Started, Ready, InEndpoints, Programmed}

// Index is the step's position in Steps, or -1.
func Index(s Step) int {
	for i, x := range Steps {
		if x == s {
			return i
		}
	}
	return -1
}

// PodReached lists the pod steps p's state shows, in order. A later step
// implies the earlier ones (a pod whose containers run was scheduled, even
// if a writer skipped a field), so the list is always a prefix of PodSteps.
func PodReached(p *corev1.Pod) []Step {
	if p == nil {
		return nil
	}
	reached := map[Step]bool{
		Created:   true,
		Scheduled: p.Spec.NodeName != "",
		Sandbox:   ConditionTrue(p, corev1.PodReadyToStartContainers) || p.Status.PodIP != "",
		Started:   allStarted(p),
		Ready:     ConditionTrue(p, corev1.PodReady),
	}
	last := 0
	for i, s := range PodSteps {
		if reached[s] {
			last = i
		}
	}
	return PodSteps[:last+1]
}

// ConditionTrue reports whether p's condition t is True.
func ConditionTrue(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// allStarted: every regular container has a status saying it runs or ran.
func allStarted(p *corev1.Pod) bool {
	if len(p.Spec.Containers) == 0 {
		return false
	}
	started := map[string]bool{}
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Running != nil,
			cs.State.Terminated != nil && !cs.State.Terminated.StartedAt.IsZero(),
			cs.LastTerminationState.Terminated != nil:
			started[cs.Name] = true
		}
	}
	for _, c := range p.Spec.Containers {
		if !started[c.Name] {
			return false
		}
	}
	return true
}

// ReadyPods lists the names of the pods s has as ready endpoints (those
// whose targetRef is a Pod and whose ready condition is not false, as
// upstream reads a nil Ready).
func ReadyPods(s *discoveryv1.EndpointSlice) []string {
	if s == nil {
		return nil
	}
	var names []string
	for _, ep := range s.Endpoints {
		if ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" || ep.TargetRef.Name == "" {
			continue
		}
		if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
			continue
		}
		names = append(names, ep.TargetRef.Name)
	}
	return names
}

// The proxy's record of what it programmed: every node's proxy keeps a
// Lease in ProxyLeaseNamespace named ProxyLeaseName(node), annotated with
// the highest bus revision its rules reflect.
const (
	ProxyLeaseNamespace          = "kube-node-lease"
	ProxyLeasePrefix             = "kube-proxy-"
	ProgrammedRevisionAnnotation = "proxy.kubebus.io/programmed-revision"
	ProgrammedTimeAnnotation     = "proxy.kubebus.io/programmed-time"
	programmedTimeLayout         = time.RFC3339Nano
)

// ProxyLeaseName is the name of node's proxy Lease.
func ProxyLeaseName(node string) string { return ProxyLeasePrefix + node }

// ProxyNode returns the node of a proxy Lease's name, and whether the name
// is one.
func ProxyNode(namespace, name string) (string, bool) {
	if namespace != ProxyLeaseNamespace || len(name) <= len(ProxyLeasePrefix) || name[:len(ProxyLeasePrefix)] != ProxyLeasePrefix {
		return "", false
	}
	return name[len(ProxyLeasePrefix):], true
}

// ReadProgrammed reads a proxy Lease: the revision its rules reflect and when
// they were programmed. ok is false when the Lease carries no (valid)
// revision.
func ReadProgrammed(l *coordinationv1.Lease) (rev int64, at time.Time, ok bool) {
	if l == nil {
		return 0, time.Time{}, false
	}
	rev, err := strconv.ParseInt(l.Annotations[ProgrammedRevisionAnnotation], 10, 64)
	if err != nil || rev <= 0 {
		return 0, time.Time{}, false
	}
	at, _ = time.Parse(programmedTimeLayout, l.Annotations[ProgrammedTimeAnnotation])
	return rev, at, true
}

// SetProgrammed writes rev and at into a proxy Lease's annotations.
func SetProgrammed(l *coordinationv1.Lease, rev int64, at time.Time) {
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[ProgrammedRevisionAnnotation] = strconv.FormatInt(rev, 10)
	l.Annotations[ProgrammedTimeAnnotation] = at.UTC().Format(programmedTimeLayout)
}

// Times records when each step first happened.
type Times map[Step]time.Time

// Observe records at as the time of every step in reached that has none
// yet, and returns those steps in order.
func (t Times) Observe(reached []Step, at time.Time) []Step {
	var fresh []Step
	for _, s := range reached {
		if _, ok := t[s]; !ok {
			t[s] = at
			fresh = append(fresh, s)
		}
	}
	return fresh
}

// Interval is the time from one step to the next one reached.
type Interval struct {
	From, To Step
	Duration time.Duration
}

// Intervals lists, in step order, the time between each recorded step and
// the recorded step before it. The intervals add up to the time from the
// first recorded step to the last.
func (t Times) Intervals() []Interval {
	var out []Interval
	var prev Step
	for _, s := range Steps {
		at, ok := t[s]
		if !ok {
			continue
		}
		if prev != "" {
			out = append(out, Interval{From: prev, To: s, Duration: at.Sub(t[prev])})
		}
		prev = s
	}
	return out
}

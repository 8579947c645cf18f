package pods

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

// Crash-loop back-off, as upstream: the first restart after an exit is
// immediate; each further one waits twice as long as the previous wait,
// from InitialBackoff up to MaxBackoff. A container that ran for
// BackoffReset before it exited starts over.
const (
	InitialBackoff = 10 * time.Second
	MaxBackoff     = 5 * time.Minute
	BackoffReset   = 10 * time.Minute
)

// BackoffEntry is the kubelet's back-off state of one container name of a
// pod. The zero value means no exit seen yet.
type BackoffEntry struct {
	// Exit is the FinishedAt of the exit this entry decided on.
	Exit time.Time
	// Delay is how long after Exit the container may start again.
	Delay time.Duration
}

// nextBackoff returns the entry for an exit at finished of a container
// that started at started, given the entry of the previous exit.
func nextBackoff(prev BackoffEntry, hasPrev bool, started, finished time.Time) BackoffEntry {
	reset := !hasPrev ||
		(!started.IsZero() && finished.Sub(started) >= BackoffReset) ||
		finished.Sub(prev.Exit) > BackoffReset+prev.Delay
	var d time.Duration
	switch {
	case reset:
		d = 0
	case prev.Delay == 0:
		d = InitialBackoff
	default:
		d = min(2*prev.Delay, MaxBackoff)
	}
	return BackoffEntry{Exit: finished, Delay: d}
}

// backoff decides whether the exited container last of c may start again at
// now. It records the decision in p.Backoff and, while waiting, sets
// p.Waiting[c.Name] and p.RetryAt, and returns false.
func (p *Plan) backoff(pod *corev1.Pod, name string, last *runtime.Container, now time.Time) bool {
	if last == nil || last.State != runtime.ContainerExited {
		return true
	}
	e, ok := p.Backoff[name]
	if !ok || !e.Exit.Equal(last.FinishedAt) {
		e = nextBackoff(e, ok, last.StartedAt, last.FinishedAt)
		p.Backoff[name] = e
	}
	at := e.Exit.Add(e.Delay)
	if !now.Before(at) {
		return true
	}
	p.wait(name, Waiting{
		Reason:  ReasonCrashLoopBackOff,
		Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", e.Delay, name, podDesc(pod)),
	}, at)
	return false
}

// podDesc formats a pod as upstream's format.Pod: name_namespace(uid).
func podDesc(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

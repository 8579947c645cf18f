package daemonset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubebus/kubebus/controllers/podwrite"
)

// Event reasons, as upstream.
const (
	ReasonSuccessfulCreate = podwrite.ReasonSuccessfulCreate
	ReasonFailedCreate     = podwrite.ReasonFailedCreate
	ReasonSuccessfulDelete = podwrite.ReasonSuccessfulDelete
	ReasonFailedDelete     = podwrite.ReasonFailedDelete
	ReasonFailedDaemonPod  = "FailedDaemonPod"
	ReasonSelectingAll     = "SelectingAll"
)

// status is the DaemonSet's status in w, as upstream's
// updateDaemonSetStatus counts it: per node that should run the pod,
// whether it has one (its oldest pod) and whether that is ready, available
// and of the current revision; per node that should not, whether it has
// one anyway (misscheduled). It also returns how long until a ready pod
// becomes available (0: none pending), so the caller can sync again then.
func (w *world) status() (appsv1.DaemonSetStatus, time.Duration) {
	st := *w.ds.Status.DeepCopy()
	st.ObservedGeneration = w.ds.Generation
	st.DesiredNumberScheduled, st.CurrentNumberScheduled, st.NumberMisscheduled = 0, 0, 0
	st.NumberReady, st.NumberAvailable, st.UpdatedNumberScheduled = 0, 0, 0
	minReady := w.ds.Spec.MinReadySeconds
	var next time.Duration
	for _, node := range w.nodes {
		shouldRun, _ := w.elig.check(node)
		pods := w.byNode[node.Name]
		// A terminating pod that already stopped does not count.
		var pod *corev1.Pod
		for _, p := range pods {
			if p.DeletionTimestamp != nil && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) {
				continue
			}
			pod = p
			break
		}
		switch {
		case shouldRun:
			st.DesiredNumberScheduled++
			if pod == nil {
				continue
			}
			st.CurrentNumberScheduled++
			if since, ready := readySince(pod); ready {
				st.NumberReady++
				if isAvailable(pod, minReady, w.now) {
					st.NumberAvailable++
				} else if d := since.Add(time.Duration(minReady) * time.Second).Sub(w.now); next == 0 || d < next {
					next = d
				}
			}
			if isUpdated(pod, w.hash) {
				st.UpdatedNumberScheduled++
			}
		case pod != nil:
			st.NumberMisscheduled++
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	return st, next
}

// statusChanged says whether st differs from ds's status.
func statusChanged(ds *appsv1.DaemonSet, st appsv1.DaemonSetStatus) bool {
	return !apiequality.Semantic.DeepEqual(ds.Status, st)
}

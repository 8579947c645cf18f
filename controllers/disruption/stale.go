package disruption

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/controllers"
)

// StalePodDisruptionTimeout is how long a pod may carry a DisruptionTarget
// condition (set by an eviction) without being deleted before the
// controller sets it back to False, as upstream.
const StalePodDisruptionTimeout = 2 * time.Minute

// staleDisruption says whether the pod carries a DisruptionTarget
// condition that the controller must reset, and how long until it is
// stale (zero: now). Conditions the kubelet set, and pods that are
// terminating or finished, are left alone.
func staleDisruption(pod *corev1.Pod, now time.Time) (bool, time.Duration) {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false, 0
	}
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.DisruptionTarget {
			continue
		}
		if c.Status != corev1.ConditionTrue || c.Reason == corev1.PodReasonTerminationByKubelet {
			return false, 0
		}
		return true, max(StalePodDisruptionTimeout-now.Sub(c.LastTransitionTime.Time), 0)
	}
	return false, 0
}

// reconcilePod resets a stale DisruptionTarget condition of the pod.
func (r *reconciler) reconcilePod(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	pod, ok := r.podGetter.Get(req.Namespace, req.Name)
	if !ok {
		return controllers.Result{}, nil
	}
	now := r.now()
	stale, wait := staleDisruption(pod, now)
	switch {
	case !stale:
		return controllers.Result{}, nil
	case wait > 0:
		return controllers.Result{RequeueAfter: wait}, nil
	}
	next := pod.DeepCopy()
	for i, c := range next.Status.Conditions {
		if c.Type == corev1.DisruptionTarget {
			next.Status.Conditions[i] = corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse,
				LastTransitionTime: metav1.NewTime(now.Truncate(time.Second))}
		}
	}
	_, err := r.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	switch {
	case err == nil:
		r.log.Debug("reset a stale DisruptionTarget condition", "pod", req.String())
		return controllers.Result{}, nil
	case apierrors.IsNotFound(err):
		return controllers.Result{}, nil
	default:
		return controllers.Result{}, fmt.Errorf("resetting the DisruptionTarget condition of pod %s: %w", req, err)
	}
}

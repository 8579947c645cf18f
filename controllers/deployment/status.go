package deployment

import (
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons, as upstream (kubectl rollout status looks for
// ProgressDeadlineExceeded).
const (
	ReasonNewRSCreated   = "NewReplicaSetCreated"
	ReasonFoundNewRS     = "FoundNewReplicaSet"
	ReasonRSUpdated      = "ReplicaSetUpdated"
	ReasonNewRSAvailable = "NewReplicaSetAvailable"
	ReasonTimedOut       = "ProgressDeadlineExceeded"
	ReasonPaused         = "DeploymentPaused"
	ReasonResumed        = "DeploymentResumed"
	ReasonRSCreateError  = "ReplicaSetCreateError"
	ReasonMinAvailable   = "MinimumReplicasAvailable"
	ReasonMinUnavailable = "MinimumReplicasUnavailable"
	ReasonScalingRS      = "ScalingReplicaSet" // event
	ReasonSelectingAll   = "SelectingAll"      // event
	ReasonFailedRSCreate = "FailedCreate"      // event
)

// calculateStatus is the Deployment's status from its ReplicaSets; the
// conditions are carried over, with Available brought up to date.
func calculateStatus(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, now time.Time) appsv1.DeploymentStatus {
	available := sumStatus(all, func(s appsv1.ReplicaSetStatus) int32 { return s.AvailableReplicas })
	st := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            sumStatus(all, func(s appsv1.ReplicaSetStatus) int32 { return s.Replicas }),
		UpdatedReplicas:     sumStatus([]*appsv1.ReplicaSet{newRS}, func(s appsv1.ReplicaSetStatus) int32 { return s.Replicas }),
		ReadyReplicas:       sumStatus(all, func(s appsv1.ReplicaSetStatus) int32 { return s.ReadyReplicas }),
		AvailableReplicas:   available,
		UnavailableReplicas: max(0, sumSpec(all)-available),
		CollisionCount:      d.Status.CollisionCount,
		Conditions:          append([]appsv1.DeploymentCondition(nil), d.Status.Conditions...),
	}
	if available >= desired(d)-maxUnavailable(d) {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinAvailable, "Deployment has minimum availability.", now))
	} else {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, ReasonMinUnavailable, "Deployment does not have minimum availability.", now))
	}
	return st
}

// rolloutStatus is calculateStatus plus the Progressing condition of a
// rollout: complete, progressing, or past its deadline. It also returns
// when to look again for a deadline (0: no need).
func rolloutStatus(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, now time.Time) (appsv1.DeploymentStatus, time.Duration) {
	st := calculateStatus(d, all, newRS, now)
	if !hasProgressDeadline(d) {
		removeCondition(&st, appsv1.DeploymentProgressing)
	}
	cur := getCondition(d.Status, appsv1.DeploymentProgressing)
	complete := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == ReasonNewRSAvailable
	if hasProgressDeadline(d) && !complete {
		subject := fmt.Sprintf("Deployment %q", d.Name)
		if newRS != nil {
			subject = fmt.Sprintf("ReplicaSet %q", newRS.Name)
		}
		switch {
		case deploymentComplete(d, &st):
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewRSAvailable, subject+" has successfully progressed.", now))
		case deploymentProgressing(d, &st):
			// Progress renews the deadline: the condition is replaced,
			// keeping its transition time if it was already True.
			c := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonRSUpdated, subject+" is progressing.", now)
			if cur != nil && cur.Status == corev1.ConditionTrue {
				c.LastTransitionTime = cur.LastTransitionTime
			}
			removeCondition(&st, appsv1.DeploymentProgressing)
			st.Conditions = append(st.Conditions, c)
		case deploymentTimedOut(d, &st, now):
			setCondition(&st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonTimedOut, subject+" has timed out progressing.", now))
		}
	}
	if f := replicaFailure(all, newRS); f != nil {
		setCondition(&st, newCondition(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, f.Reason, f.Message, now))
	} else {
		removeCondition(&st, appsv1.DeploymentReplicaFailure)
	}
	return st, deadlineCheck(d, &st, now)
}

// replicaFailure is the ReplicaFailure condition of the new ReplicaSet, or
// else of any, or nil.
func replicaFailure(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) *appsv1.ReplicaSetCondition {
	for _, rs := range append([]*appsv1.ReplicaSet{newRS}, all...) {
		if rs == nil {
			continue
		}
		for i := range rs.Status.Conditions {
			c := &rs.Status.Conditions[i]
			if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
				return c
			}
		}
	}
	return nil
}

// deadlineCheck is how long until a stalled rollout's deadline passes (and
// a second more), so it can be marked ProgressDeadlineExceeded; 0 when no
// check is due.
func deadlineCheck(d *appsv1.Deployment, st *appsv1.DeploymentStatus, now time.Time) time.Duration {
	c := getCondition(*st, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(d) || c == nil || c.Status != corev1.ConditionTrue || c.Reason == ReasonNewRSAvailable || deploymentComplete(d, st) {
		return 0
	}
	after := c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(now)
	return max(after, 0) + time.Second
}

// pausedCondition sets Progressing to Unknown when a Deployment is paused or
// resumed and reports whether it changed.
func pausedCondition(d *appsv1.Deployment, st *appsv1.DeploymentStatus, now time.Time) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := getCondition(*st, appsv1.DeploymentProgressing)
	pausedSet := c != nil && c.Reason == ReasonPaused
	switch {
	case d.Spec.Paused && !pausedSet:
		setCondition(st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonPaused, "Deployment is paused", now))
	case !d.Spec.Paused && pausedSet:
		setCondition(st, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonResumed, "Deployment is resumed", now))
	default:
		return false
	}
	return true
}

func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

// deploymentComplete: every replica is updated and available, and nothing
// else runs.
func deploymentComplete(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	n := desired(d)
	return st.UpdatedReplicas == n && st.Replicas == n && st.AvailableReplicas == n && st.ObservedGeneration >= d.Generation
}

// deploymentProgressing: the new status shows progress over the recorded one.
func deploymentProgressing(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	was := d.Status
	return st.UpdatedReplicas > was.UpdatedReplicas ||
		st.Replicas-st.UpdatedReplicas < was.Replicas-was.UpdatedReplicas ||
		st.ReadyReplicas > was.ReadyReplicas ||
		st.AvailableReplicas > was.AvailableReplicas
}

// deploymentTimedOut: no progress for progressDeadlineSeconds.
func deploymentTimedOut(d *appsv1.Deployment, st *appsv1.DeploymentStatus, now time.Time) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := getCondition(*st, appsv1.DeploymentProgressing)
	switch {
	case c == nil, c.Reason == ReasonNewRSAvailable:
		return false
	case c.Reason == ReasonTimedOut:
		return true
	}
	return c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Before(now)
}

func newCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, msg string, now time.Time) appsv1.DeploymentCondition {
	ts := metav1.NewTime(now.Truncate(time.Second))
	return appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: msg, LastUpdateTime: ts, LastTransitionTime: ts}
}

func getCondition(st appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setCondition records c unless a condition of its type already has its
// status and reason; a change of reason alone keeps the transition time.
func setCondition(st *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := getCondition(*st, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(st, c.Type)
	st.Conditions = append(st.Conditions, c)
}

func removeCondition(st *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var out []appsv1.DeploymentCondition
	for _, c := range st.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	st.Conditions = out
}

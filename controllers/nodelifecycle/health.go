package nodelifecycle

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons and messages of the conditions of a silent node, as upstream.
const (
	ReasonNodeStatusUnknown      = "NodeStatusUnknown"
	MessageNodeStatusUnknown     = "Kubelet stopped posting node status."
	ReasonNodeStatusNeverUpdated = "NodeStatusNeverUpdated"
	MessageNodeNeverUpdated      = "Kubelet never posted node status."
)

// watchedConditions are set to Unknown when the kubelet goes silent.
var watchedConditions = []corev1.NodeConditionType{
	corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure,
}

// heartbeat is what this controller last saw of a node's kubelet: the
// lease's renew time and the Ready condition's heartbeat, and when, by its
// own clock, either last changed.
type heartbeat struct {
	leaseRenew time.Time
	readyBeat  time.Time
	probe      time.Time
}

// observe updates what was seen of a node (h is nil the first time). A
// lease or a node that was not seen keeps its previous value; pass nil.
func observe(h *heartbeat, node *corev1.Node, lease *coordinationv1.Lease, now time.Time) heartbeat {
	var next heartbeat
	if h != nil {
		next = *h
	}
	changed := h == nil
	if lease != nil && lease.Spec.RenewTime != nil && !lease.Spec.RenewTime.Time.Equal(next.leaseRenew) {
		next.leaseRenew, changed = lease.Spec.RenewTime.Time, true
	}
	if node != nil {
		if c := condition(node.Status.Conditions, corev1.NodeReady); c != nil && !c.LastHeartbeatTime.Time.Equal(next.readyBeat) {
			next.readyBeat, changed = c.LastHeartbeatTime.Time, true
		}
	}
	if changed {
		next.probe = now
	}
	return next
}

// silentFor returns how long the node may still stay silent (negative or
// zero: it is overdue). A node that never posted Ready has the startup
// grace period.
func silentFor(node *corev1.Node, h heartbeat, now time.Time, grace, startupGrace time.Duration) time.Duration {
	g := grace
	if condition(node.Status.Conditions, corev1.NodeReady) == nil {
		g = startupGrace
	}
	return h.probe.Add(g).Sub(now)
}

// staleConditions returns the conditions of a node whose kubelet went
// silent: Ready and the pressure conditions become Unknown (added when
// missing), the others stay. changed is false when they already are.
func staleConditions(node *corev1.Node, now time.Time) (conds []corev1.NodeCondition, changed bool) {
	conds = make([]corev1.NodeCondition, len(node.Status.Conditions))
	copy(conds, node.Status.Conditions)
	t := metav1.NewTime(now)
	for _, typ := range watchedConditions {
		c := condition(conds, typ)
		switch {
		case c == nil:
			conds = append(conds, corev1.NodeCondition{
				Type: typ, Status: corev1.ConditionUnknown, Reason: ReasonNodeStatusNeverUpdated, Message: MessageNodeNeverUpdated,
				LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: t,
			})
			changed = true
		case c.Status != corev1.ConditionUnknown:
			c.Status, c.Reason, c.Message, c.LastTransitionTime = corev1.ConditionUnknown, ReasonNodeStatusUnknown, MessageNodeStatusUnknown, t
			changed = true
		}
	}
	return conds, changed
}

func condition(conds []corev1.NodeCondition, typ corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// readyStatus is the node's Ready status ("" when it has none).
func readyStatus(node *corev1.Node) corev1.ConditionStatus {
	if c := condition(node.Status.Conditions, corev1.NodeReady); c != nil {
		return c.Status
	}
	return ""
}

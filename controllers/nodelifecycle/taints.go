package nodelifecycle

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditionTaints maps a condition's status to the NoSchedule taint it calls
// for.
var conditionTaints = []struct {
	typ    corev1.NodeConditionType
	status corev1.ConditionStatus
	key    string
}{
	{corev1.NodeReady, corev1.ConditionFalse, corev1.TaintNodeNotReady},
	{corev1.NodeReady, corev1.ConditionUnknown, corev1.TaintNodeUnreachable},
	{corev1.NodeMemoryPressure, corev1.ConditionTrue, corev1.TaintNodeMemoryPressure},
	{corev1.NodeDiskPressure, corev1.ConditionTrue, corev1.TaintNodeDiskPressure},
	{corev1.NodeNetworkUnavailable, corev1.ConditionTrue, corev1.TaintNodeNetworkUnavailable},
	{corev1.NodePIDPressure, corev1.ConditionTrue, corev1.TaintNodePIDPressure},
}

// ownNoSchedule reports whether this controller manages a NoSchedule taint.
func ownNoSchedule(t corev1.Taint) bool {
	if t.Effect != corev1.TaintEffectNoSchedule {
		return false
	}
	if t.Key == corev1.TaintNodeUnschedulable {
		return true
	}
	for _, ct := range conditionTaints {
		if ct.key == t.Key {
			return true
		}
	}
	return false
}

// ownNoExecute reports whether this controller manages a NoExecute taint.
func ownNoExecute(t corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoExecute && (t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable)
}

// noExecuteKey is the NoExecute taint the Ready status calls for ("" none).
func noExecuteKey(ready corev1.ConditionStatus) string {
	switch ready {
	case corev1.ConditionFalse:
		return corev1.TaintNodeNotReady
	case corev1.ConditionUnknown:
		return corev1.TaintNodeUnreachable
	}
	return ""
}

// taintDecision is desiredTaints' answer.
type taintDecision struct {
	taints []corev1.Taint
	// changed: taints differ from the node's.
	changed bool
	// adds: a NoExecute taint is added where there was none, which the
	// caller must rate-limit (pass mayAdd).
	adds bool
	// heldBack: a NoExecute taint is due but was not added (mayAdd false).
	heldBack bool
}

// desiredTaints returns the node's taints given its conditions: its
// NoSchedule taints follow the conditions and spec.unschedulable; its
// NoExecute taint follows Ready when noExecute is true (false removes it),
// keeping its time when it stays, getting now when it is added or swaps
// not-ready for unreachable, and being added only if mayAdd. Taints the
// controller does not manage stay as they are, first.
func desiredTaints(node *corev1.Node, noExecute, mayAdd bool, now time.Time) taintDecision {
	wantNoSched := map[string]bool{}
	for _, ct := range conditionTaints {
		if c := condition(node.Status.Conditions, ct.typ); c != nil && c.Status == ct.status {
			wantNoSched[ct.key] = true
		}
	}
	if node.Spec.Unschedulable {
		wantNoSched[corev1.TaintNodeUnschedulable] = true
	}
	wantNoExec := ""
	if noExecute {
		wantNoExec = noExecuteKey(readyStatus(node))
	}

	var d taintDecision
	var haveNoExec *corev1.Taint
	haveNoSched := map[string]bool{}
	for i, t := range node.Spec.Taints {
		switch {
		case ownNoSchedule(t):
			if wantNoSched[t.Key] && !haveNoSched[t.Key] {
				haveNoSched[t.Key] = true
				d.taints = append(d.taints, t)
			} else {
				d.changed = true
			}
		case ownNoExecute(t):
			if haveNoExec == nil {
				haveNoExec = &node.Spec.Taints[i]
			}
			if t.Key != wantNoExec || haveNoExec != &node.Spec.Taints[i] {
				d.changed = true
			} else {
				d.taints = append(d.taints, t)
			}
		default:
			d.taints = append(d.taints, t)
		}
	}
	for _, ct := range conditionTaints {
		if wantNoSched[ct.key] && !haveNoSched[ct.key] {
			haveNoSched[ct.key] = true
			d.taints = append(d.taints, corev1.Taint{Key: ct.key, Effect: corev1.TaintEffectNoSchedule})
			d.changed = true
		}
	}
	if wantNoSched[corev1.TaintNodeUnschedulable] && !haveNoSched[corev1.TaintNodeUnschedulable] {
		d.taints = append(d.taints, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
		d.changed = true
	}
	if wantNoExec != "" && (haveNoExec == nil || haveNoExec.Key != wantNoExec) {
		swap := haveNoExec != nil
		if swap || mayAdd {
			t := metav1.NewTime(now)
			d.taints = append(d.taints, corev1.Taint{Key: wantNoExec, Effect: corev1.TaintEffectNoExecute, TimeAdded: &t})
			d.changed, d.adds = true, !swap
		} else {
			d.heldBack = true
		}
	}
	return d
}

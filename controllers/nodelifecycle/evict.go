package nodelifecycle

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// tolerates reports whether a toleration tolerates a taint. The numeric
// operators (Lt, Gt) are an alpha feature; like a cluster without it, they
// tolerate nothing.
func tolerates(tol corev1.Toleration, taint corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != taint.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != taint.Key {
		return false
	}
	switch tol.Operator {
	case corev1.TolerationOpExists:
		return true
	case "", corev1.TolerationOpEqual:
		return tol.Value == taint.Value
	}
	return false
}

// evictionTime returns when a pod must leave a node with these NoExecute
// taints: for each taint, when it was added (addedAt) plus the longest
// tolerationSeconds among the pod's tolerations of it (never, if one has
// none; at once, if none tolerates it); the earliest of those. ok is false
// when the pod may stay forever.
func evictionTime(pod *corev1.Pod, taints []corev1.Taint, addedAt func(corev1.Taint) time.Time) (at time.Time, ok bool) {
	for _, taint := range taints {
		var (
			tolerated bool
			forever   bool
			longest   int64
		)
		for _, tol := range pod.Spec.Tolerations {
			if !tolerates(tol, taint) {
				continue
			}
			tolerated = true
			if tol.TolerationSeconds == nil {
				forever = true
				break
			}
			longest = max(longest, *tol.TolerationSeconds)
		}
		if forever {
			continue
		}
		t := addedAt(taint)
		if tolerated {
			t = t.Add(time.Duration(longest) * time.Second)
		} else {
			t = time.Time{} // at once
		}
		if !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	return at, ok
}

// evictionPlan splits a node's pods into those to delete now and the time
// of the next eviction (zero if none is due later). Pods being deleted are
// skipped.
func evictionPlan(pods []*corev1.Pod, taints []corev1.Taint, addedAt func(corev1.Taint) time.Time, now time.Time) (due []*corev1.Pod, next time.Time) {
	if len(taints) == 0 {
		return nil, time.Time{}
	}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		at, ok := evictionTime(pod, taints, addedAt)
		switch {
		case !ok:
		case !at.After(now):
			due = append(due, pod)
		case next.IsZero() || at.Before(next):
			next = at
		}
	}
	return due, next
}

// noExecuteTaints returns the node's NoExecute taints.
func noExecuteTaints(node *corev1.Node) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}

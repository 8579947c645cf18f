package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// DefaultTolerationSecondsValue is how long, by default, a pod stays bound to
// a node that is not ready or unreachable before it is evicted (upstream's
// --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds).
const DefaultTolerationSecondsValue int64 = 300

// DefaultTolerationSeconds is upstream's DefaultTolerationSeconds plugin: on
// pod CREATE it adds the tolerations
//
//	node.kubernetes.io/not-ready:NoExecute op=Exists for NotReady seconds
//	node.kubernetes.io/unreachable:NoExecute op=Exists for Unreachable seconds
//
// unless the pod already has a toleration for that taint key (or for every
// key) with the NoExecute effect (or every effect), whatever its operator,
// value and seconds. Pods created before the plugin ran are left alone
// (upstream also runs it on UPDATE, where for pods it admitted it changes
// nothing).
type DefaultTolerationSeconds struct {
	// NotReady and Unreachable are the added tolerations' seconds; nil means
	// DefaultTolerationSecondsValue.
	NotReady, Unreachable *int64
}

var _ auth.Admitter = DefaultTolerationSeconds{}

// Admit implements auth.Admitter.
func (d DefaultTolerationSeconds) Admit(_ context.Context, req *auth.AdmissionRequest) error {
	if req.Operation != auth.Create || req.Subresource != "" ||
		req.Attributes.APIGroup != "" || req.Attributes.Resource != "pods" {
		return nil
	}
	pod, ok := req.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	pod.Spec.Tolerations = addDefaultTolerations(pod.Spec.Tolerations, seconds(d.NotReady), seconds(d.Unreachable))
	return nil
}

func seconds(p *int64) int64 {
	if p == nil {
		return DefaultTolerationSecondsValue
	}
	return *p
}

// addDefaultTolerations returns tols with the not-ready and unreachable
// NoExecute tolerations appended where missing.
func addDefaultTolerations(tols []corev1.Toleration, notReady, unreachable int64) []corev1.Toleration {
	hasNotReady, hasUnreachable := false, false
	for _, t := range tols {
		hasNotReady = hasNotReady || coversNoExecute(t, corev1.TaintNodeNotReady)
		hasUnreachable = hasUnreachable || coversNoExecute(t, corev1.TaintNodeUnreachable)
	}
	if !hasNotReady {
		tols = append(tols, corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &notReady})
	}
	if !hasUnreachable {
		tols = append(tols, corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &unreachable})
	}
	return tols
}

// coversNoExecute reports whether t already speaks for the NoExecute taint
// with key: same or empty key, NoExecute or empty effect.
func coversNoExecute(t corev1.Toleration, key string) bool {
	return (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "")
}

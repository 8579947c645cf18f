package job

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// policyMatch is what a pod failure policy says of one failed pod.
type policyMatch struct {
	// action of the first matching rule; empty when none matched (the
	// failure counts, as with action Count).
	action batchv1.PodFailurePolicyAction
	// failJob is the message of a FailJob match.
	failJob string
}

// counts reports whether the failure counts toward backoffLimit.
func (m policyMatch) counts() bool { return m.action != batchv1.PodFailurePolicyActionIgnore }

// matchFailurePolicy evaluates the rules in order against a failed pod: a
// rule on exit codes matches a terminated container (regular, then init)
// with a non-zero code In or NotIn its values; a rule on pod conditions
// matches a condition of that type and status.
func matchFailurePolicy(policy *batchv1.PodFailurePolicy, p *corev1.Pod) policyMatch {
	if policy == nil {
		return policyMatch{}
	}
	for i, r := range policy.Rules {
		var what string
		switch {
		case r.OnExitCodes != nil:
			c := matchExitCodes(p.Status.ContainerStatuses, r.OnExitCodes)
			if c == nil {
				c = matchExitCodes(p.Status.InitContainerStatuses, r.OnExitCodes)
			}
			if c == nil {
				continue
			}
			what = fmt.Sprintf("Container %s for pod %s/%s failed with exit code %d matching %s rule at index %d",
				c.Name, p.Namespace, p.Name, c.State.Terminated.ExitCode, r.Action, i)
		case len(r.OnPodConditions) > 0:
			c := matchConditions(p.Status.Conditions, r.OnPodConditions)
			if c == nil {
				continue
			}
			what = fmt.Sprintf("Pod %s/%s has condition %s matching %s rule at index %d", p.Namespace, p.Name, c.Type, r.Action, i)
		default:
			continue
		}
		m := policyMatch{action: r.Action}
		if r.Action == batchv1.PodFailurePolicyActionFailJob {
			m.failJob = what
		}
		return m
	}
	return policyMatch{}
}

func matchExitCodes(statuses []corev1.ContainerStatus, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	for i := range statuses {
		s := &statuses[i]
		t := s.State.Terminated
		if t == nil || t.ExitCode == 0 || (req.ContainerName != nil && *req.ContainerName != s.Name) {
			continue
		}
		in := slices.Contains(req.Values, t.ExitCode)
		if (req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && in) || (req.Operator == batchv1.PodFailurePolicyOnExitCodesOpNotIn && !in) {
			return s
		}
	}
	return nil
}

func matchConditions(conds []corev1.PodCondition, patterns []batchv1.PodFailurePolicyOnPodConditionsPattern) *corev1.PodCondition {
	for i := range conds {
		for _, pt := range patterns {
			if conds[i].Type == pt.Type && conds[i].Status == pt.Status {
				return &conds[i]
			}
		}
	}
	return nil
}

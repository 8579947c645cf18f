package validation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

var statusPath = field.NewPath("status")

// validatePodStatusUpdate validates a write through pods/status, as
// upstream's ValidatePodStatusUpdate does. The write keeps the stored spec
// (the API server copies it from the stored pod), so the spec is not
// validated again: a pod stored before a rule was tightened still gets its
// status written, and a status write does not pay for a walk of the whole
// spec. What is checked is the metadata change, the mirror-pod annotation,
// the status: its conditions' types, containers that may not leave the
// terminated state under the pod's restart policy, and its pod and host
// IPs.
func validatePodStatusUpdate(pod, old *corev1.Pod) field.ErrorList {
	errs := validateMetaUpdate(&pod.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateMirrorAnnotationUpdate(pod.Annotations, old.Annotations)...)
	if pod.Spec.NodeName != old.Spec.NodeName {
		errs = append(errs, field.Forbidden(statusPath.Child("nodeName"), "may not be changed directly"))
	}
	errs = append(errs, validatePodConditions(pod.Status.Conditions, statusPath.Child("conditions"))...)
	policy := old.Spec.RestartPolicy
	errs = append(errs, validateTerminatedStays(pod.Status.ContainerStatuses, old.Status.ContainerStatuses, statusPath.Child("containerStatuses"), policy, nil)...)
	// Sidecars (init containers that restart always) may restart.
	var sidecars map[string]bool
	for _, c := range old.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			if sidecars == nil {
				sidecars = map[string]bool{}
			}
			sidecars[c.Name] = true
		}
	}
	errs = append(errs, validateTerminatedStays(pod.Status.InitContainerStatuses, old.Status.InitContainerStatuses, statusPath.Child("initContainerStatuses"), policy, sidecars)...)
	// The kubelet never restarts an ephemeral container.
	errs = append(errs, validateTerminatedStays(pod.Status.EphemeralContainerStatuses, old.Status.EphemeralContainerStatuses, statusPath.Child("ephemeralContainerStatuses"), corev1.RestartPolicyNever, nil)...)
	errs = append(errs, validateStatusIPs(podIPsOf(pod), podIPsOf(old), statusPath.Child("podIPs"))...)
	errs = append(errs, validateStatusIPs(hostIPsOf(pod), hostIPsOf(old), statusPath.Child("hostIPs"))...)
	return errs
}

func podIPsOf(pod *corev1.Pod) []string {
	ips := make([]string, len(pod.Status.PodIPs))
	for i, ip := range pod.Status.PodIPs {
		ips[i] = ip.IP
	}
	return ips
}

func hostIPsOf(pod *corev1.Pod) []string {
	ips := make([]string, len(pod.Status.HostIPs))
	for i, ip := range pod.Status.HostIPs {
		ips[i] = ip.IP
	}
	return ips
}

// podSystemConditions are the condition types a pod's conditions may use
// without a domain-qualified name.
var podSystemConditions = map[corev1.PodConditionType]bool{
	corev1.PodScheduled:   true,
	corev1.PodReady:       true,
	corev1.PodInitialized: true,
}

// validatePodConditions requires every condition type beyond the system
// ones to be a qualified name.
func validatePodConditions(conds []corev1.PodCondition, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range conds {
		if podSystemConditions[c.Type] {
			continue
		}
		errs = append(errs, validateQualifiedName(string(c.Type), path.Index(i).Child("type"))...)
	}
	return errs
}

// validateTerminatedStays forbids a container that terminated from
// becoming anything else when the pod's restart policy does not restart
// it: never under Never, and after a success under OnFailure. The
// containers named in restartable restart whatever the pod's policy.
func validateTerminatedStays(statuses, old []corev1.ContainerStatus, path *field.Path, policy corev1.RestartPolicy, restartable map[string]bool) field.ErrorList {
	if policy == corev1.RestartPolicyAlways {
		return nil
	}
	var errs field.ErrorList
	for i, o := range old {
		t := o.State.Terminated
		if t == nil || t.ExitCode != 0 && policy == corev1.RestartPolicyOnFailure || restartable[o.Name] {
			continue
		}
		for _, s := range statuses {
			if s.Name == o.Name && s.State.Terminated == nil {
				errs = append(errs, field.Forbidden(path.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
		}
	}
	return errs
}

// validateStatusIPs requires pod or host IPs to be IP addresses, at most
// one of each family. An address already stored (stored) stays allowed
// in the legacy forms the strict check refuses, as upstream ratchets it.
func validateStatusIPs(ips, stored []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	var v4, v6 int
	for i, s := range ips {
		if e := validation.IsValidIPForLegacyField(path.Index(i), s, true, stored); len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		if netutils.ParseIPSloppy(s).To4() != nil {
			v4++
		} else {
			v6++
		}
	}
	if len(errs) == 0 && (len(ips) > 2 || v4 > 1 || v6 > 1) {
		errs = append(errs, field.Invalid(path, ips, "may specify no more than one IP for each IP family"))
	}
	return errs
}

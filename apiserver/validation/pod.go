package validation

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const podDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

var (
	specPath = field.NewPath("spec")

	supportedRestartPolicies  = []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}
	supportedDNSPolicies      = []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone}
	supportedPreemption       = []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}
	supportedOSes             = []corev1.OSName{corev1.Linux, corev1.Windows}
	supportedFSGroupPolicies  = []corev1.PodFSGroupChangePolicy{corev1.FSGroupChangeAlways, corev1.FSGroupChangeOnRootMismatch}
	supportedSupplementalPols = []corev1.SupplementalGroupsPolicy{corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict}

	sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)
)

// validatePod validates a new pod.
func validatePod(pod *corev1.Pod) field.ErrorList {
	errs := validatePodMetaAndSpec(pod)
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("ephemeralContainers"), "cannot be set on create"))
	}
	if pod.Spec.NodeName != "" && len(pod.Spec.SchedulingGates) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	return errs
}

// validatePodMetaAndSpec is what a pod must satisfy on create and update.
func validatePodMetaAndSpec(pod *corev1.Pod) field.ErrorList {
	errs := validateMeta(&pod.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	errs = append(errs, validatePodAnnotations(pod.Annotations, &pod.Spec, metadataPath.Child("annotations"))...)
	errs = append(errs, validatePodSpec(&pod.Spec, specPath, true)...)
	if pod.Spec.ServiceAccountName == "" {
		for i, v := range pod.Spec.Volumes {
			if v.Projected == nil {
				continue
			}
			for j, src := range v.Projected.Sources {
				if src.ServiceAccountToken != nil {
					p := specPath.Child("volumes").Index(i).Child("projected", "sources").Index(j).Child("serviceAccountToken")
					errs = append(errs, field.Forbidden(p, "must not be specified when serviceAccountName is not set"))
				}
			}
		}
	}
	return errs
}

// validatePodAnnotations checks the annotations with a meaning for pods.
func validatePodAnnotations(annotations map[string]string, spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if v, mirror := annotations[corev1.MirrorPodAnnotationKey]; mirror && spec.NodeName == "" {
		errs = append(errs, field.Invalid(path.Key(corev1.MirrorPodAnnotationKey), v, "must set spec.nodeName if mirror pod annotation is set"))
	}
	if v, ok := annotations[podDeletionCostAnnotation]; ok {
		if _, err := strconv.ParseInt(v, 10, 32); err != nil {
			errs = append(errs, field.Invalid(path.Key(podDeletionCostAnnotation), v, "must be a 32bit integer"))
		}
	}
	return errs
}

func validatePodTemplate(t *corev1.PodTemplate) field.ErrorList {
	errs := validateMeta(&t.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	return append(errs, validatePodTemplateSpec(&t.Template, field.NewPath("template"))...)
}

// validatePodTemplateSpec validates the pod template of a workload.
func validatePodTemplateSpec(t *corev1.PodTemplateSpec, path *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(t.Labels, path.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, path.Child("annotations"))...)
	errs = append(errs, validatePodAnnotations(t.Annotations, &t.Spec, path.Child("annotations"))...)
	errs = append(errs, validatePodSpec(&t.Spec, path.Child("spec"), false)...)
	if len(t.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(path.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

// validatePodSpec validates a pod spec, in a Pod (isPod) or in a template.
func validatePodSpec(spec *corev1.PodSpec, path *field.Path, isPod bool) field.ErrorList {
	var errs field.ErrorList
	if spec.TerminationGracePeriodSeconds == nil {
		errs = append(errs, field.Required(path.Child("terminationGracePeriodSeconds"), ""))
	}
	volumes, verrs := validateVolumes(spec.Volumes, path.Child("volumes"))
	errs = append(errs, verrs...)
	pc := podContext{
		volumes:     volumes,
		gracePeriod: spec.TerminationGracePeriodSeconds,
		isPod:       isPod,
		hostUsers:   spec.HostUsers == nil || *spec.HostUsers,
	}
	errs = append(errs, validateContainers(spec.Containers, pc, path.Child("containers"))...)
	errs = append(errs, validateInitContainers(spec.InitContainers, spec.Containers, pc, path.Child("initContainers"))...)
	errs = append(errs, validateEphemeralContainers(spec, pc, path.Child("ephemeralContainers"))...)
	errs = append(errs, validateHostNamespaces(spec, isPod, path)...)

	switch spec.RestartPolicy {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
	case "":
		errs = append(errs, field.Required(path.Child("restartPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(path.Child("restartPolicy"), spec.RestartPolicy, supportedRestartPolicies))
	}
	switch spec.DNSPolicy {
	case corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone:
	case "":
		errs = append(errs, field.Required(path.Child("dnsPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(path.Child("dnsPolicy"), spec.DNSPolicy, supportedDNSPolicies))
	}
	errs = append(errs, validateDNSConfig(spec.DNSConfig, spec.DNSPolicy, path.Child("dnsConfig"))...)
	errs = append(errs, metav1validation.ValidateLabels(spec.NodeSelector, path.Child("nodeSelector"))...)
	errs = append(errs, validatePodSecurityContext(spec, path)...)
	errs = append(errs, validateAffinity(spec.Affinity, path.Child("affinity"))...)
	errs = append(errs, validateTopologySpread(spec.TopologySpreadConstraints, path.Child("topologySpreadConstraints"))...)
	errs = append(errs, validateTolerations(spec.Tolerations, path.Child("tolerations"))...)
	for i, g := range spec.ReadinessGates {
		errs = append(errs, validateQualifiedName(string(g.ConditionType), path.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	gates := map[string]bool{}
	for i, g := range spec.SchedulingGates {
		p := path.Child("schedulingGates").Index(i)
		errs = append(errs, validateQualifiedName(g.Name, p)...)
		if gates[g.Name] {
			errs = append(errs, field.Duplicate(p, g.Name))
		}
		gates[g.Name] = true
	}
	for i, a := range spec.HostAliases {
		p := path.Child("hostAliases").Index(i)
		errs = append(errs, validateIP(a.IP, p.Child("ip"))...)
		for j, h := range a.Hostnames {
			errs = append(errs, validateDNSSubdomain(h, p.Child("hostnames").Index(j))...)
		}
	}

	named := []struct {
		value string
		path  string
		check func(string) []string
	}{
		{spec.ServiceAccountName, "serviceAccountName", validation.IsDNS1123Subdomain},
		{spec.NodeName, "nodeName", validation.IsDNS1123Subdomain},
		{spec.Hostname, "hostname", validation.IsDNS1123Label},
		{spec.Subdomain, "subdomain", validation.IsDNS1123Label},
		{spec.PriorityClassName, "priorityClassName", validation.IsDNS1123Subdomain},
	}
	for _, n := range named {
		if n.value != "" {
			errs = append(errs, messages(path.Child(n.path), n.value, n.check(n.value))...)
		}
	}
	if spec.RuntimeClassName != nil {
		errs = append(errs, validateDNSSubdomain(*spec.RuntimeClassName, path.Child("runtimeClassName"))...)
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *d, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	if pp := spec.PreemptionPolicy; pp != nil {
		switch *pp {
		case corev1.PreemptLowerPriority, corev1.PreemptNever:
		case "":
			errs = append(errs, field.Required(path.Child("preemptionPolicy"), ""))
		default:
			errs = append(errs, field.NotSupported(path.Child("preemptionPolicy"), *pp, supportedPreemption))
		}
	}
	if spec.Overhead != nil {
		errs = append(errs, validateResources(&corev1.ResourceRequirements{Limits: spec.Overhead}, path.Child("overhead"))...)
	}
	if spec.OS != nil {
		if spec.OS.Name == "" {
			errs = append(errs, field.Required(path.Child("os", "name"), "cannot be empty"))
		} else if !slices.Contains(supportedOSes, spec.OS.Name) {
			errs = append(errs, field.NotSupported(path.Child("os"), spec.OS.Name, supportedOSes))
		}
	}
	return errs
}

// validateHostNamespaces checks the fields that depend on sharing the
// host's namespaces: with host networking a container port is a host port;
// a user namespace cannot be combined with any host namespace.
func validateHostNamespaces(spec *corev1.PodSpec, isPod bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.HostNetwork {
		for i, c := range spec.Containers {
			for j, port := range c.Ports {
				// A template may leave hostPort to the pod's defaulting.
				if (isPod || port.HostPort != 0) && port.HostPort != port.ContainerPort {
					p := path.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort")
					errs = append(errs, field.Invalid(p, port.HostPort, "must match `containerPort` when `hostNetwork` is true"))
				}
			}
		}
	}
	if spec.HostUsers != nil && !*spec.HostUsers {
		for _, f := range []struct {
			set  bool
			name string
		}{{spec.HostNetwork, "hostNetwork"}, {spec.HostPID, "hostPID"}, {spec.HostIPC, "hostIPC"}} {
			if f.set {
				errs = append(errs, field.Forbidden(path.Child(f.name), "when `pod.Spec.HostUsers` is false"))
			}
		}
	}
	if spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace && spec.HostPID {
		errs = append(errs, field.Invalid(path.Child("shareProcessNamespace"), true, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	return errs
}

// validatePodSecurityContext checks the pod-level security settings.
func validatePodSecurityContext(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	sc := spec.SecurityContext
	if sc == nil {
		return nil
	}
	path = path.Child("securityContext")
	var errs field.ErrorList
	if sc.RunAsUser != nil {
		errs = append(errs, messages(path.Child("runAsUser"), *sc.RunAsUser, validation.IsValidUserID(*sc.RunAsUser))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, messages(path.Child("runAsGroup"), *sc.RunAsGroup, validation.IsValidGroupID(*sc.RunAsGroup))...)
	}
	if sc.FSGroup != nil {
		errs = append(errs, messages(path.Child("fsGroup"), *sc.FSGroup, validation.IsValidGroupID(*sc.FSGroup))...)
	}
	for i, g := range sc.SupplementalGroups {
		errs = append(errs, messages(path.Child("supplementalGroups").Index(i), g, validation.IsValidGroupID(g))...)
	}
	if p := sc.FSGroupChangePolicy; p != nil && !slices.Contains(supportedFSGroupPolicies, *p) {
		errs = append(errs, field.NotSupported(path.Child("fsGroupChangePolicy"), *p, supportedFSGroupPolicies))
	}
	if p := sc.SupplementalGroupsPolicy; p != nil && !slices.Contains(supportedSupplementalPols, *p) {
		errs = append(errs, field.NotSupported(path.Child("supplementalGroupsPolicy"), *p, supportedSupplementalPols))
	}
	names := map[string]bool{}
	for i, s := range sc.Sysctls {
		p := path.Child("sysctls").Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p, ""))
		case len(s.Name) > 253 || !sysctlName.MatchString(s.Name):
			errs = append(errs, field.Invalid(p, s.Name, fmt.Sprintf("must have at most 253 characters and match regex %s", sysctlName)))
		case names[s.Name]:
			errs = append(errs, field.Duplicate(p, s.Name))
		}
		names[s.Name] = true
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, path.Child("seccompProfile"))...)
	errs = append(errs, validateAppArmorProfile(sc.AppArmorProfile, path.Child("appArmorProfile"))...)
	return errs
}

// Limits of the resolver configuration, from libc.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

func validateDNSConfig(cfg *corev1.PodDNSConfig, policy corev1.DNSPolicy, path *field.Path) field.ErrorList {
	if policy == corev1.DNSNone {
		if cfg == nil {
			return field.ErrorList{field.Required(path, "must provide `dnsConfig` when `dnsPolicy` is None")}
		}
		if len(cfg.Nameservers) == 0 {
			return field.ErrorList{field.Required(path.Child("nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None")}
		}
	}
	if cfg == nil {
		return nil
	}
	var errs field.ErrorList
	if len(cfg.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(path.Child("nameservers"), cfg.Nameservers, fmt.Sprintf("must not have more than %d nameservers", maxDNSNameservers)))
	}
	for i, ns := range cfg.Nameservers {
		errs = append(errs, validation.IsValidIP(path.Child("nameservers").Index(i), ns)...)
	}
	if len(cfg.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(path.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %d search paths", maxDNSSearchPaths)))
	}
	if len(strings.Join(cfg.Searches, " ")) > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(path.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %d characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, s := range cfg.Searches {
		if s == "." {
			continue
		}
		s = strings.TrimSuffix(s, ".")
		errs = append(errs, messages(path.Child("searches").Index(i), s, validation.IsDNS1123SubdomainWithUnderscore(s))...)
	}
	for i, o := range cfg.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(path.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}

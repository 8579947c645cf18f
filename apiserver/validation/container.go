package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podContext is what the container checks need from the rest of the spec.
type podContext struct {
	volumes     map[string]corev1.VolumeSource // the valid volumes by name
	gracePeriod *int64                         // spec.terminationGracePeriodSeconds
	isPod       bool                           // a Pod, not a template
	hostUsers   bool                           // no user namespace
}

var (
	supportedPullPolicies       = []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}
	supportedTerminationPolices = []corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}
	supportedPropagations       = []corev1.MountPropagationMode{corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone}
	supportedRecursiveReadOnly  = []corev1.RecursiveReadOnlyMode{corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible}
)

// validateContainers validates the regular containers of a pod spec.
func validateContainers(containers []corev1.Container, pc podContext, path *field.Path) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	names := map[string]bool{}
	for i := range containers {
		c := &containers[i]
		p := path.Index(i)
		errs = append(errs, validateContainerCommon(c, pc, p)...)
		if names[c.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		}
		names[c.Name] = true
		errs = append(errs, validateLifecycleAndProbes(c, pc, p)...)
		if c.RestartPolicy != nil {
			errs = append(errs, field.Forbidden(p.Child("restartPolicy"), "may not be set for non-init containers"))
		}
	}
	return append(errs, validateHostPortConflicts(containers, 0, path, map[string]bool{})...)
}

// validateInitContainers validates init containers, whose names must not
// clash with the regular containers'. Only restartable (sidecar) init
// containers may have probes and lifecycle hooks.
func validateInitContainers(init, regular []corev1.Container, pc podContext, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for _, c := range regular {
		names[c.Name] = true
	}
	for i := range init {
		c := &init[i]
		p := path.Index(i)
		errs = append(errs, validateContainerCommon(c, pc, p)...)
		sidecar := false
		if rp := c.RestartPolicy; rp != nil {
			if *rp != corev1.ContainerRestartPolicyAlways {
				errs = append(errs, field.NotSupported(p.Child("restartPolicy"), *rp, []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways}))
			}
			sidecar = *rp == corev1.ContainerRestartPolicyAlways
		}
		if names[c.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		} else if c.Name != "" {
			names[c.Name] = true
		}
		// Init containers run one at a time, so only a container's own
		// ports can conflict.
		errs = append(errs, validateHostPortConflicts(init[i:i+1], i, path, map[string]bool{})...)
		if sidecar {
			errs = append(errs, validateLifecycleAndProbes(c, pc, p)...)
			continue
		}
		const msg = "may not be set for init containers without restartPolicy=Always"
		if c.Lifecycle != nil {
			errs = append(errs, field.Forbidden(p.Child("lifecycle"), msg))
		}
		if c.LivenessProbe != nil {
			errs = append(errs, field.Forbidden(p.Child("livenessProbe"), msg))
		}
		if c.ReadinessProbe != nil {
			errs = append(errs, field.Forbidden(p.Child("readinessProbe"), msg))
		}
		if c.StartupProbe != nil {
			errs = append(errs, field.Forbidden(p.Child("startupProbe"), msg))
		}
	}
	return errs
}

// validateEphemeralContainers validates debug containers: names unique
// across all containers, and a target that is a regular or init container.
func validateEphemeralContainers(spec *corev1.PodSpec, pc podContext, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	others := map[string]bool{}
	for _, c := range spec.Containers {
		others[c.Name] = true
	}
	for _, c := range spec.InitContainers {
		others[c.Name] = true
	}
	names := map[string]bool{}
	for i := range spec.EphemeralContainers {
		ec := &spec.EphemeralContainers[i]
		p := path.Index(i)
		errs = append(errs, validateContainerCommon((*corev1.Container)(&ec.EphemeralContainerCommon), pc, p)...)
		if others[ec.Name] || names[ec.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), ec.Name))
		}
		names[ec.Name] = true
		if ec.TargetContainerName != "" && !others[ec.TargetContainerName] {
			errs = append(errs, field.NotFound(p.Child("targetContainerName"), ec.TargetContainerName))
		}
	}
	return errs
}

// validateContainerCommon validates what every kind of container has.
func validateContainerCommon(c *corev1.Container, pc podContext, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		errs = append(errs, validateDNSLabel(c.Name, p.Child("name"))...)
	}
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	} else if pc.isPod && len(c.Image) != len(strings.TrimSpace(c.Image)) {
		errs = append(errs, field.Invalid(p.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	switch c.TerminationMessagePolicy {
	case corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
	case "":
		errs = append(errs, field.Required(p.Child("terminationMessagePolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy, supportedTerminationPolices))
	}
	switch c.ImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	case "":
		errs = append(errs, field.Required(p.Child("imagePullPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("imagePullPolicy"), c.ImagePullPolicy, supportedPullPolicies))
	}
	errs = append(errs, validateContainerPorts(c.Ports, p.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, p.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, p.Child("envFrom"))...)
	errs = append(errs, validateVolumeMounts(c, pc, p.Child("volumeMounts"))...)
	errs = append(errs, validateResources(&c.Resources, p.Child("resources"))...)
	errs = append(errs, validateSecurityContext(c.SecurityContext, pc, p.Child("securityContext"))...)
	return errs
}

func validateContainerPorts(ports []corev1.ContainerPort, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, port := range ports {
		p := path.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
				errs = append(errs, messages(p.Child("name"), port.Name, msgs)...)
			} else if names[port.Name] {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			} else {
				names[port.Name] = true
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(p.Child("containerPort"), ""))
		} else {
			errs = append(errs, messages(p.Child("containerPort"), port.ContainerPort, validation.IsValidPortNum(int(port.ContainerPort)))...)
		}
		if port.HostPort != 0 {
			errs = append(errs, messages(p.Child("hostPort"), port.HostPort, validation.IsValidPortNum(int(port.HostPort)))...)
		}
		errs = append(errs, validateProtocol(port.Protocol, p.Child("protocol"))...)
	}
	return errs
}

// validateHostPortConflicts reports a host port (with its protocol and host
// IP) used twice. offset is the index of containers[0] in the list at path.
func validateHostPortConflicts(containers []corev1.Container, offset int, path *field.Path, seen map[string]bool) field.ErrorList {
	var errs field.ErrorList
	for ci, c := range containers {
		for pi, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if seen[key] {
				errs = append(errs, field.Duplicate(path.Index(offset+ci).Child("ports").Index(pi).Child("hostPort"), key))
			}
			seen[key] = true
		}
	}
	return errs
}

// validateVolumeMounts checks that each mount names a valid volume of the
// pod and that mount paths are unique.
func validateVolumeMounts(c *corev1.Container, pc podContext, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := map[string]bool{}
	for i, m := range c.VolumeMounts {
		p := path.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if _, ok := pc.volumes[m.Name]; !ok {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		}
		if paths[m.MountPath] {
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths[m.MountPath] = true
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, p.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(p.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, validateLocalDescendingPath(m.SubPathExpr, p.Child("subPathExpr"))...)
		}
		if mp := m.MountPropagation; mp != nil {
			if !slices.Contains(supportedPropagations, *mp) {
				errs = append(errs, field.NotSupported(p.Child("mountPropagation"), *mp, supportedPropagations))
			} else if *mp == corev1.MountPropagationBidirectional && !privileged(c) {
				errs = append(errs, field.Forbidden(p.Child("mountPropagation"), "Bidirectional mount propagation is available only to privileged containers"))
			}
		}
		if rro := m.RecursiveReadOnly; rro != nil {
			switch {
			case !slices.Contains(supportedRecursiveReadOnly, *rro):
				errs = append(errs, field.NotSupported(p.Child("recursiveReadOnly"), *rro, supportedRecursiveReadOnly))
			case *rro != corev1.RecursiveReadOnlyDisabled && !m.ReadOnly:
				errs = append(errs, field.Forbidden(p.Child("recursiveReadOnly"), "may only be specified when readOnly is true"))
			}
		}
	}
	return errs
}

func privileged(c *corev1.Container) bool {
	return c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
}

// validateSecurityContext checks a container's security settings.
func validateSecurityContext(sc *corev1.SecurityContext, pc podContext, path *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.RunAsUser != nil {
		errs = append(errs, messages(path.Child("runAsUser"), *sc.RunAsUser, validation.IsValidUserID(*sc.RunAsUser))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, messages(path.Child("runAsGroup"), *sc.RunAsGroup, validation.IsValidGroupID(*sc.RunAsGroup))...)
	}
	if pm := sc.ProcMount; pm != nil {
		switch *pm {
		case corev1.DefaultProcMount:
		case corev1.UnmaskedProcMount:
			if pc.hostUsers {
				errs = append(errs, field.Invalid(path.Child("procMount"), *pm, "`hostUsers` must be false to use `Unmasked`"))
			}
		default:
			errs = append(errs, field.NotSupported(path.Child("procMount"), *pm, []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}))
		}
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, path.Child("seccompProfile"))...)
	errs = append(errs, validateAppArmorProfile(sc.AppArmorProfile, path.Child("appArmorProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(path, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil && slices.Contains(sc.Capabilities.Add, "CAP_SYS_ADMIN") {
			errs = append(errs, field.Invalid(path, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
		}
	}
	return errs
}

func validateSeccompProfile(sp *corev1.SeccompProfile, path *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	switch sp.Type {
	case corev1.SeccompProfileTypeLocalhost:
		if sp.LocalhostProfile == nil {
			errs = append(errs, field.Required(path.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
		} else {
			errs = append(errs, validateLocalDescendingPath(*sp.LocalhostProfile, path.Child("localhostProfile"))...)
		}
		return errs
	case corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined:
	case "":
		errs = append(errs, field.Required(path.Child("type"), "type is required when seccompProfile is set"))
	default:
		errs = append(errs, field.NotSupported(path.Child("type"), sp.Type, []corev1.SeccompProfileType{
			corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined,
		}))
	}
	if sp.LocalhostProfile != nil {
		errs = append(errs, field.Invalid(path.Child("localhostProfile"), sp, "can only be set when seccomp type is Localhost"))
	}
	return errs
}

func validateAppArmorProfile(ap *corev1.AppArmorProfile, path *field.Path) field.ErrorList {
	if ap == nil {
		return nil
	}
	switch ap.Type {
	case corev1.AppArmorProfileTypeLocalhost:
		if ap.LocalhostProfile == nil || *ap.LocalhostProfile == "" {
			return field.ErrorList{field.Required(path.Child("localhostProfile"), "must be set when AppArmor type is Localhost")}
		}
	case corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined:
		if ap.LocalhostProfile != nil {
			return field.ErrorList{field.Invalid(path.Child("localhostProfile"), ap.LocalhostProfile, "can only be set when AppArmor type is Localhost")}
		}
	case "":
		return field.ErrorList{field.Required(path.Child("type"), "type is required when appArmorProfile is set")}
	default:
		return field.ErrorList{field.NotSupported(path.Child("type"), ap.Type, []corev1.AppArmorProfileType{
			corev1.AppArmorProfileTypeLocalhost, corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined,
		})}
	}
	return nil
}

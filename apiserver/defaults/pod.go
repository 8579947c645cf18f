package defaults

import (
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Priorities of the two built-in priority classes.
const (
	systemClusterCritical         = "system-cluster-critical"
	systemClusterCriticalPriority = int32(2000000000)
	systemNodeCritical            = "system-node-critical"
	systemNodeCriticalPriority    = int32(2000001000)
)

// defaultPod defaults a Pod. Beyond what every pod spec gets, a Pod (and not
// a template) gets requests copied from limits, enableServiceLinks, host ports
// under hostNetwork, and what the ServiceAccount and Priority admission
// plugins add.
func defaultPod(pod *corev1.Pod) {
	spec := &pod.Spec
	defaultPodSpec(spec)

	for i := range spec.Containers {
		requestsFromLimits(&spec.Containers[i].Resources)
	}
	for i := range spec.InitContainers {
		requestsFromLimits(&spec.InitContainers[i].Resources)
	}
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = new(corev1.DefaultEnableServiceLinks)
	}
	if spec.HostNetwork {
		hostNetworkPorts(spec.Containers)
		hostNetworkPorts(spec.InitContainers)
	}
	defaultPriority(spec)
}

// defaultPriority sets what the Priority admission plugin sets when it needs
// no PriorityClass lookup: the fixed values of the two system classes. A pod
// naming any other class, or none (it gets the globalDefault class, if one
// exists), is left alone; its priority and preemption policy come from the
// admission plugin, which must tell a priority the client set from none.
func defaultPriority(spec *corev1.PodSpec) {
	var priority int32
	switch spec.PriorityClassName {
	case systemClusterCritical:
		priority = systemClusterCriticalPriority
	case systemNodeCritical:
		priority = systemNodeCriticalPriority
	default:
		return
	}
	if spec.Priority == nil {
		spec.Priority = new(priority)
	}
	if spec.PreemptionPolicy == nil {
		spec.PreemptionPolicy = new(corev1.PreemptLowerPriority)
	}
}

// defaultPodTemplateSpec defaults the pod template of a workload. Templates
// get the pod spec defaults only; the pod-only ones materialise when the
// controller creates the pod.
func defaultPodTemplateSpec(t *corev1.PodTemplateSpec) {
	defaultPodSpec(&t.Spec)
}

// defaultPodSpec defaults what every pod spec, in a Pod or in a template,
// gets.
func defaultPodSpec(spec *corev1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = new(int64(corev1.DefaultTerminationGracePeriodSeconds))
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	// serviceAccount is the deprecated spelling of serviceAccountName; the
	// new field wins and the old one mirrors it.
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName

	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		defaultContainer((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
}

// defaultContainer defaults one container of any kind.
func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if from := c.Env[i].ValueFrom; from != nil && from.FieldRef != nil {
			defaultFieldRef(from.FieldRef)
		}
	}
	roundResources(c.Resources.Limits)
	roundResources(c.Resources.Requests)
	defaultProbe(c.LivenessProbe)
	defaultProbe(c.ReadinessProbe)
	defaultProbe(c.StartupProbe)
	if lc := c.Lifecycle; lc != nil {
		if lc.PostStart != nil {
			defaultHTTPGet(lc.PostStart.HTTPGet)
		}
		if lc.PreStop != nil {
			defaultHTTPGet(lc.PreStop.HTTPGet)
		}
	}
}

// defaultProbe sets the timing thresholds of a probe and its HTTP defaults.
func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGet(p.HTTPGet)
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func defaultFieldRef(f *corev1.ObjectFieldSelector) {
	if f.APIVersion == "" {
		f.APIVersion = "v1"
	}
}

// defaultVolume gives a volume without a source an emptyDir, and file
// modes to the sources that project files.
func defaultVolume(v *corev1.Volume) {
	src := &v.VolumeSource
	if (*src == corev1.VolumeSource{}) {
		src.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if s := src.Secret; s != nil && s.DefaultMode == nil {
		s.DefaultMode = new(corev1.SecretVolumeSourceDefaultMode)
	}
	if s := src.ConfigMap; s != nil && s.DefaultMode == nil {
		s.DefaultMode = new(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if s := src.DownwardAPI; s != nil {
		if s.DefaultMode == nil {
			s.DefaultMode = new(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		defaultDownwardAPIFiles(s.Items)
	}
	if s := src.Projected; s != nil {
		if s.DefaultMode == nil {
			s.DefaultMode = new(corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range s.Sources {
			if t := s.Sources[i].ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				t.ExpirationSeconds = new(int64(3600))
			}
			if d := s.Sources[i].DownwardAPI; d != nil {
				defaultDownwardAPIFiles(d.Items)
			}
		}
	}
	if s := src.HostPath; s != nil && s.Type == nil {
		s.Type = new(corev1.HostPathUnset)
	}
}

func defaultDownwardAPIFiles(files []corev1.DownwardAPIVolumeFile) {
	for i := range files {
		if files[i].FieldRef != nil {
			defaultFieldRef(files[i].FieldRef)
		}
	}
}

// requestsFromLimits copies each limit without a matching request into the
// requests, so that a container with only limits asks for what it may use.
func requestsFromLimits(r *corev1.ResourceRequirements) {
	if len(r.Limits) == 0 {
		return
	}
	if r.Requests == nil {
		r.Requests = make(corev1.ResourceList, len(r.Limits))
	}
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = limit.DeepCopy()
		}
	}
}

// roundResources rounds every quantity up to milli precision, as the API
// server does rather than reject finer values.
func roundResources(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(resource.Milli)
		list[name] = q
	}
}

// hostNetworkPorts sets each unset host port to its container port: with
// host networking the two are the same port.
func hostNetworkPorts(containers []corev1.Container) {
	for i := range containers {
		for j := range containers[i].Ports {
			p := &containers[i].Ports[j]
			if p.HostPort == 0 {
				p.HostPort = p.ContainerPort
			}
		}
	}
}

// The grammar of an image reference, as container runtimes parse it:
// [domain/]path[:tag][@digest], where only the domain may use upper case.
const (
	domainComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	domainPart      = domainComponent + `(?:\.` + domainComponent + `)*(?::[0-9]+)?`
	pathComponent   = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
	tagPart         = `[\w][\w.-]{0,127}`
	digestPart      = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
)

var imageRef = regexp.MustCompile(`^(?:` + domainPart + `/)?` + pathComponent + `(?:/` + pathComponent + `)*` +
	`(?::(` + tagPart + `))?(?:@(` + digestPart + `))?$`)

// pullPolicy returns the pull policy an image gets by default: Always when it
// names the "latest" tag, explicitly or by naming no tag and no digest, and
// IfNotPresent otherwise (including references that do not parse, which
// validation reports).
func pullPolicy(image string) corev1.PullPolicy {
	tag, digest, ok := imageTag(image)
	if ok && (tag == "latest" || tag == "" && digest == "") {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// imageTag splits the tag and digest off a reference; ok is false when the
// reference is malformed.
func imageTag(image string) (tag, digest string, ok bool) {
	m := imageRef.FindStringSubmatch(image)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

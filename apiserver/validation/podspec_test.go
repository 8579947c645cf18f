package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestValidatePodSpecDetails covers the less common parts of a pod spec:
// projected and downward API volumes, hooks, DNS, security and scheduling.
func TestValidatePodSpecDetails(t *testing.T) {
	t.Parallel()
	c0 := "spec.containers[0]"
	tests := []struct {
		name   string
		change func(*corev1.Pod)
		wants  []want
	}{
		{"downward API volume", func(p *corev1.Pod) {
			p.Spec.Volumes[0] = defaultedVolume(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
				Items: []corev1.DownwardAPIVolumeFile{
					{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
					{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu"}},
				},
			}}})
		}, nil},
		{"downward API file needs a source", func(p *corev1.Pod) {
			p.Spec.Volumes[0] = defaultedVolume(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
				Items: []corev1.DownwardAPIVolumeFile{{Path: "x"}, {Path: "../y", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			}}})
		}, []want{
			required("spec.volumes[0].downwardAPI.items[0]"),
			invalid("spec.volumes[0].downwardAPI.items[1].path"),
			invalid("spec.volumes[0].downwardAPI.items[1].path"),
			notSupported("spec.volumes[0].downwardAPI.items[1].fieldRef.fieldPath"),
			notFound(c0 + ".volumeMounts[0].name"),
		}},
		{"projected paths do not collide", func(p *corev1.Pod) {
			p.Spec.Volumes[0] = defaultedVolume(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}, Items: []corev1.KeyToPath{{Key: "k", Path: "f"}}}},
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}, Items: []corev1.KeyToPath{{Key: "k", Path: "f"}}}},
				},
			}}})
		}, []want{invalid("spec.volumes[0].projected.sources[1].secret.items[0].path"), notFound(c0 + ".volumeMounts[0].name")}},
		{"projected token lifetime", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "default" // what the ServiceAccount admission plugin sets
			p.Spec.Volumes[0] = corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				DefaultMode: new(int32(0o644)),
				Sources:     []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: new(int64(60))}}},
			}}}
		}, []want{invalid("spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds"), notFound(c0 + ".volumeMounts[0].name")}},
		{"items need a key and a path", func(p *corev1.Pod) {
			p.Spec.Volumes[1].ConfigMap.Items = []corev1.KeyToPath{{Key: "", Path: "/abs"}}
		}, []want{required("spec.volumes[1].configMap.items[0].key"), invalid("spec.volumes[1].configMap.items[0].path"), notFound(c0 + ".volumeMounts[1].name")}},
		{"host path type", func(p *corev1.Pod) {
			p.Spec.Volumes[0] = corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var", Type: new(corev1.HostPathType("Dir"))}}}
		}, []want{notSupported("spec.volumes[0].hostPath.type"), notFound(c0 + ".volumeMounts[0].name")}},
		{"resource field ref", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env[1].ValueFrom = &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.gpu"}}
		}, []want{notSupported(c0 + ".env[1].valueFrom.resourceFieldRef.resource")}},
		{"file key ref", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env[1].ValueFrom = &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "data", Path: "env", Key: ""}}
		}, []want{required(c0 + ".env[1].valueFrom.fileKeyRef.key")}},
		{"envFrom names its source", func(p *corev1.Pod) {
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{}}}
		}, []want{required(c0 + ".envFrom[0].configMapRef.name")}},
		{"envFrom has one source", func(p *corev1.Pod) {
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{
				ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}},
				SecretRef:    &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}},
			}}
		}, []want{invalid(c0 + ".envFrom")}},
		{"pre-stop sleep within the grace period", func(p *corev1.Pod) {
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 31}}}
		}, []want{invalid(c0 + ".lifecycle.preStop.sleep")}},
		{"hook has one handler", func(p *corev1.Pod) {
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{
				Exec: &corev1.ExecAction{Command: []string{"true"}}, Sleep: &corev1.SleepAction{Seconds: 1},
			}}
		}, []want{forbidden(c0 + ".lifecycle.postStart.sleep")}},
		{"exec needs a command", func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe.HTTPGet = nil
			p.Spec.Containers[0].ReadinessProbe.Exec = &corev1.ExecAction{}
		}, []want{required(c0 + ".readinessProbe.exec.command")}},
		{"http scheme", func(p *corev1.Pod) { p.Spec.Containers[0].ReadinessProbe.HTTPGet.Scheme = "FTP" }, []want{notSupported(c0 + ".readinessProbe.httpGet.scheme")}},
		{"bidirectional propagation needs privilege", func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts[0].MountPropagation = new(corev1.MountPropagationBidirectional)
		}, []want{forbidden(c0 + ".volumeMounts[0].mountPropagation")}},
		{"privileged bidirectional propagation", func(p *corev1.Pod) {
			p.Spec.Containers[0].VolumeMounts[0].MountPropagation = new(corev1.MountPropagationBidirectional)
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: new(true)}
		}, nil},
		{"seccomp localhost needs a profile", func(p *corev1.Pod) {
			p.Spec.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}
		}, []want{required("spec.securityContext.seccompProfile.localhostProfile")}},
		{"apparmor type", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: "Strict"}}
		}, []want{notSupported(c0 + ".securityContext.appArmorProfile.type")}},
		{"sysctls", func(p *corev1.Pod) {
			p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "net.core.somaxconn"}, {Name: "net.core.somaxconn"}, {Name: "Bad Name"}}
		}, []want{duplicate("spec.securityContext.sysctls[1].name"), invalid("spec.securityContext.sysctls[2].name")}},
		{"fs group", func(p *corev1.Pod) { p.Spec.SecurityContext.FSGroup = new(int64(-5)) }, []want{invalid("spec.securityContext.fsGroup")}},
		{"dns config", func(p *corev1.Pod) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig = &corev1.PodDNSConfig{
				Nameservers: []string{"1.1.1.1", "8.8.8.8", "9.9.9.9", "nameserver"},
				Searches:    []string{"svc.cluster.local.", "."},
				Options:     []corev1.PodDNSConfigOption{{Name: ""}},
			}
		}, []want{invalid("spec.dnsConfig.nameservers"), invalid("spec.dnsConfig.nameservers[3]"), required("spec.dnsConfig.options[0]")}},
		{"preferred node affinity weight", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight:     0,
				Preference: corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}},
			}}}}
		}, []want{
			invalid("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"),
			required("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchFields[0].values"),
		}},
		{"required node affinity needs terms", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
		}, []want{required("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms")}},
		{"pod affinity weight", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 101, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname"},
			}}}}
		}, []want{invalid("spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight")}},
		{"topology spread constraints are unique", func(p *corev1.Pod) {
			c := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway, MinDomains: new(int32(2))}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{c, c}
		}, []want{
			duplicate("spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}"),
			invalid("spec.topologySpreadConstraints[0].minDomains"),
			invalid("spec.topologySpreadConstraints[1].minDomains"),
		}},
		{"scheduling gates are unique", func(p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/a"}, {Name: "example.com/a"}}
		}, []want{duplicate("spec.schedulingGates[1]")}},
		{"os", func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: "plan9"} }, []want{notSupported("spec.os")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pod := validPod()
			tt.change(pod)
			expectErrors(t, ValidateCreate(pod), tt.wants...)
		})
	}
}

func defaultedVolume(v corev1.Volume) corev1.Volume {
	pod := defaulted(&corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{v}}})
	return pod.Spec.Volumes[0]
}

func TestValidatePodTemplate(t *testing.T) {
	t.Parallel()
	tmpl := defaulted(&corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Template:   validTemplate(),
	})
	expectErrors(t, ValidateCreate(tmpl))

	bad := tmpl.DeepCopy()
	bad.Template.Spec.HostNetwork = true
	bad.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
	expectErrors(t, ValidateUpdate(bad, tmpl)) // a template may leave the host port to the pod

	bad.Template.Spec.Containers[0].Ports[0].HostPort = 81
	expectErrors(t, ValidateUpdate(bad, tmpl), invalid("template.spec.containers[0].ports[0].hostPort"))
}

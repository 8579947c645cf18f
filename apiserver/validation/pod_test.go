package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// validPod is a defaulted pod that passes validation, with something of
// each part the tests change.
func validPod() *corev1.Pod {
	return defaulted(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "7"},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "data"},
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web"}}}},
			},
			InitContainers: []corev1.Container{{Name: "setup", Image: "busybox:1.36", Command: []string{"true"}}},
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "nginx:1.27",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
				Env: []corev1.EnvVar{
					{Name: "MODE", Value: "prod"},
					{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "config", MountPath: "/etc/web"}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{"cpu": resource.MustParse("100m")},
					Limits:   corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("128Mi")},
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}},
			}},
			Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}},
		},
	})
}

func TestValidatePod(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*corev1.Pod)
		wants  []want
	}{
		{"valid", func(*corev1.Pod) {}, nil},
		{"name", func(p *corev1.Pod) { p.Name = "Web" }, []want{invalid("metadata.name")}},
		{"namespace required", func(p *corev1.Pod) { p.Namespace = "" }, []want{required("metadata.namespace")}},
		{"containers required", func(p *corev1.Pod) { p.Spec.Containers = nil }, []want{required("spec.containers")}},
		{"container name required", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "" }, []want{required("spec.containers[0].name")}},
		{"container name is a DNS label", func(p *corev1.Pod) { p.Spec.Containers[0].Name = "App_1" }, []want{invalid("spec.containers[0].name")}},
		{"container names are unique", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
				Name: "app", Image: "x:1", ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			})
		}, []want{duplicate("spec.containers[1].name")}},
		{"init and regular names are unique", func(p *corev1.Pod) { p.Spec.InitContainers[0].Name = "app" }, []want{duplicate("spec.initContainers[0].name")}},
		{"image required", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }, []want{required("spec.containers[0].image")}},
		{"image without padding", func(p *corev1.Pod) { p.Spec.Containers[0].Image = " nginx" }, []want{invalid("spec.containers[0].image")}},
		{"init image required", func(p *corev1.Pod) { p.Spec.InitContainers[0].Image = "" }, []want{required("spec.initContainers[0].image")}},
		{"pull policy", func(p *corev1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "Sometimes" }, []want{notSupported("spec.containers[0].imagePullPolicy")}},
		{"restart policy values", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, []want{notSupported("spec.restartPolicy")}},
		{"restart policy required", func(p *corev1.Pod) { p.Spec.RestartPolicy = "" }, []want{required("spec.restartPolicy")}},
		{"dns policy", func(p *corev1.Pod) { p.Spec.DNSPolicy = "Cluster" }, []want{notSupported("spec.dnsPolicy")}},
		{"dns policy None needs a config", func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSNone }, []want{required("spec.dnsConfig")}},
		{"grace period required", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = nil }, []want{required("spec.terminationGracePeriodSeconds")}},
		{"container port required", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 0 }, []want{required("spec.containers[0].ports[0].containerPort")}},
		{"container port range", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 70000 }, []want{invalid("spec.containers[0].ports[0].containerPort")}},
		{"port protocol", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = "ICMP" }, []want{notSupported("spec.containers[0].ports[0].protocol")}},
		{"port name", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].Name = "http-port-too-long" }, []want{invalid("spec.containers[0].ports[0].name")}},
		{"port names are unique", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{Name: "http", ContainerPort: 81, Protocol: corev1.ProtocolTCP})
		}, []want{duplicate("spec.containers[0].ports[1].name")}},
		{"host ports do not conflict", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{
				{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP},
				{ContainerPort: 81, HostPort: 8080, Protocol: corev1.ProtocolTCP},
			}
			p.Spec.Containers[0].ReadinessProbe = nil
		}, []want{duplicate("spec.containers[0].ports[1].hostPort")}},
		{"host network pins host ports", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports[0].HostPort = 8080
		}, []want{invalid("spec.containers[0].ports[0].hostPort")}},
		{"requests within limits", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests["cpu"] = resource.MustParse("2")
		}, []want{invalid("spec.containers[0].resources.requests")}},
		{"no negative quantities", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits["memory"] = resource.MustParse("-1")
		}, []want{invalid("spec.containers[0].resources.limits[memory]"), invalid("spec.containers[0].resources.requests")}},
		{"unknown resource", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits["gpu"] = resource.MustParse("1")
		}, []want{invalid("spec.containers[0].resources.limits[gpu]")}},
		{"extended resources need equal limits", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
		}, []want{required("spec.containers[0].resources.limits")}},
		{"extended resources are whole", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits["example.com/gpu"] = resource.MustParse("500m")
		}, []want{invalid("spec.containers[0].resources.limits[example.com/gpu]")}},
		{"volume names are unique", func(p *corev1.Pod) { p.Spec.Volumes[1].Name = "data" }, []want{
			duplicate("spec.volumes[1].name"), notFound("spec.containers[0].volumeMounts[1].name"),
		}},
		{"a mount names a volume", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].Name = "cache" }, []want{notFound("spec.containers[0].volumeMounts[0].name")}},
		{"a mount of an invalid volume is not found", func(p *corev1.Pod) {
			p.Spec.Volumes[1].ConfigMap.Name = ""
		}, []want{required("spec.volumes[1].configMap.name"), notFound("spec.containers[0].volumeMounts[1].name")}},
		{"mount paths are unique", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[1].MountPath = "/data" }, []want{invalid("spec.containers[0].volumeMounts[1].mountPath")}},
		{"sub path stays inside", func(p *corev1.Pod) { p.Spec.Containers[0].VolumeMounts[0].SubPath = "../etc" }, []want{invalid("spec.containers[0].volumeMounts[0].subPath")}},
		{"volume needs a source", func(p *corev1.Pod) { p.Spec.Volumes[0].EmptyDir = nil }, []want{
			required("spec.volumes[0]"), notFound("spec.containers[0].volumeMounts[0].name"),
		}},
		{"volume has one source", func(p *corev1.Pod) {
			p.Spec.Volumes[0].HostPath = &corev1.HostPathVolumeSource{Path: "/tmp"}
		}, []want{forbidden("spec.volumes[0].emptyDir"), notFound("spec.containers[0].volumeMounts[0].name")}},
		{"file mode", func(p *corev1.Pod) { p.Spec.Volumes[1].ConfigMap.DefaultMode = new(int32(0o1000)) }, []want{
			invalid("spec.volumes[1].configMap.defaultMode"), notFound("spec.containers[0].volumeMounts[1].name"),
		}},
		{"env name", func(p *corev1.Pod) { p.Spec.Containers[0].Env[0].Name = "" }, []want{required("spec.containers[0].env[0].name")}},
		{"env value or valueFrom", func(p *corev1.Pod) { p.Spec.Containers[0].Env[1].Value = "x" }, []want{invalid("spec.containers[0].env[1].valueFrom")}},
		{"env field path", func(p *corev1.Pod) { p.Spec.Containers[0].Env[1].ValueFrom.FieldRef.FieldPath = "spec.hostname" }, []want{
			notSupported("spec.containers[0].env[1].valueFrom.fieldRef.fieldPath"),
		}},
		{"env label subscript", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env[1].ValueFrom.FieldRef.FieldPath = "metadata.labels['app']"
		}, nil},
		{"env configmap key", func(p *corev1.Pod) {
			p.Spec.Containers[0].Env[1].ValueFrom = &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "a/b",
			}}
		}, []want{invalid("spec.containers[0].env[1].valueFrom.configMapKeyRef.key")}},
		{"envFrom needs a source", func(p *corev1.Pod) { p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{Prefix: "X_"}} }, []want{invalid("spec.containers[0].envFrom")}},
		{"probe handler", func(p *corev1.Pod) { p.Spec.Containers[0].ReadinessProbe.HTTPGet = nil }, []want{required("spec.containers[0].readinessProbe")}},
		{"probe port", func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe.HTTPGet.Port = intstr.FromInt32(0)
		}, []want{invalid("spec.containers[0].readinessProbe.httpGet.port")}},
		{"liveness probe succeeds once", func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = p.Spec.Containers[0].ReadinessProbe.DeepCopy()
			p.Spec.Containers[0].LivenessProbe.SuccessThreshold = 2
		}, []want{invalid("spec.containers[0].livenessProbe.successThreshold")}},
		{"init containers have no probes", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].ReadinessProbe = p.Spec.Containers[0].ReadinessProbe.DeepCopy()
		}, []want{forbidden("spec.initContainers[0].readinessProbe")}},
		{"sidecars may have probes", func(p *corev1.Pod) {
			p.Spec.InitContainers[0].RestartPolicy = new(corev1.ContainerRestartPolicyAlways)
			p.Spec.InitContainers[0].ReadinessProbe = p.Spec.Containers[0].ReadinessProbe.DeepCopy()
		}, nil},
		{"regular containers have no restart policy", func(p *corev1.Pod) {
			p.Spec.Containers[0].RestartPolicy = new(corev1.ContainerRestartPolicyAlways)
		}, []want{forbidden("spec.containers[0].restartPolicy")}},
		{"toleration operator", func(p *corev1.Pod) { p.Spec.Tolerations[0].Operator = "In" }, []want{notSupported("spec.tolerations[0].operator")}},
		{"toleration without key", func(p *corev1.Pod) { p.Spec.Tolerations[0].Key = "" }, []want{invalid("spec.tolerations[0].operator")}},
		{"toleration seconds need NoExecute", func(p *corev1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = new(int64(5)) }, []want{invalid("spec.tolerations[0].effect")}},
		{"node name", func(p *corev1.Pod) { p.Spec.NodeName = "Node_1" }, []want{invalid("spec.nodeName")}},
		{"active deadline", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = new(int64(0)) }, []want{invalid("spec.activeDeadlineSeconds")}},
		{"ephemeral containers are added later", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox", ImagePullPolicy: corev1.PullAlways, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}}}
		}, []want{forbidden("spec.ephemeralContainers")}},
		{"node affinity operator", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: "Is", Values: []string{"a"}}}}},
			}}}
		}, []want{invalid("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator")}},
		{"pod anti-affinity topology key", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
			}}
		}, []want{required("spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey")}},
		{"topology spread", func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 0, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
		}, []want{invalid("spec.topologySpreadConstraints[0].maxSkew")}},
		{"security context user", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: new(int64(-1))}
		}, []want{invalid("spec.containers[0].securityContext.runAsUser")}},
		{"mirror pods name their node", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
		}, []want{invalid("metadata.annotations[kubernetes.io/config.mirror]")}},
		{"service account token needs a service account", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = ""
			p.Spec.DeprecatedServiceAccount = ""
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}},
			}}})
		}, []want{forbidden("spec.volumes[2].projected.sources[0].serviceAccountToken")}},
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

func TestValidatePodMessages(t *testing.T) {
	t.Parallel()
	pod := validPod()
	pod.Spec.Containers[0].Resources.Requests["cpu"] = resource.MustParse("2")
	expectDetail(t, ValidateCreate(pod), "spec.containers[0].resources.requests", "must be less than or equal to cpu limit of 1")

	pod = validPod()
	pod.Spec.RestartPolicy = "Sometimes"
	errs := ValidateCreate(pod)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`) {
		t.Fatalf("got %v", errs)
	}
}

package defaults

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// minimalPod is what a user writes: a name and one container.
func minimalPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "nginx"}},
		},
	}
}

// defaultedMinimalPod is minimalPod as an upstream API server stores it,
// written out by hand.
func defaultedMinimalPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:                     "app",
				Image:                    "nginx",
				ImagePullPolicy:          corev1.PullAlways,
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: new(int64(30)),
			DNSPolicy:                     corev1.DNSClusterFirst,
			SecurityContext:               &corev1.PodSecurityContext{},
			SchedulerName:                 "default-scheduler",
			EnableServiceLinks:            new(true),
		},
	}
}

func TestDefaultPod(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   func(*corev1.Pod) // changes minimalPod
		want func(*corev1.Pod) // changes defaultedMinimalPod
	}{
		{
			name: "minimal pod",
			in:   func(*corev1.Pod) {},
			want: func(*corev1.Pod) {},
		},
		{
			name: "user values are kept",
			in: func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyNever
				p.Spec.DNSPolicy = corev1.DNSDefault
				p.Spec.TerminationGracePeriodSeconds = new(int64(5))
				p.Spec.SchedulerName = "other"
				p.Spec.ServiceAccountName = "robot"
				p.Spec.EnableServiceLinks = new(false)
				p.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
			},
			want: func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyNever
				p.Spec.DNSPolicy = corev1.DNSDefault
				p.Spec.TerminationGracePeriodSeconds = new(int64(5))
				p.Spec.SchedulerName = "other"
				p.Spec.ServiceAccountName = "robot"
				p.Spec.DeprecatedServiceAccount = "robot"
				p.Spec.EnableServiceLinks = new(false)
				p.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
			},
		},
		{
			name: "deprecated serviceAccount fills serviceAccountName",
			in:   func(p *corev1.Pod) { p.Spec.DeprecatedServiceAccount = "old" },
			want: func(p *corev1.Pod) {
				p.Spec.ServiceAccountName = "old"
				p.Spec.DeprecatedServiceAccount = "old"
			},
		},
		{
			name: "mirror pod gets no service account",
			in: func(p *corev1.Pod) {
				p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
			},
			want: func(p *corev1.Pod) {
				p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
				p.Spec.ServiceAccountName = ""
				p.Spec.DeprecatedServiceAccount = ""
			},
		},
		{
			name: "tagged image is pulled if not present",
			in:   func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.27" },
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0].Image = "nginx:1.27"
				p.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
			},
		},
		{
			name: "init container and ports",
			in: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:latest"}}
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP}}
			},
			want: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{
					Name: "init", Image: "busybox:latest", ImagePullPolicy: corev1.PullAlways,
					TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				}}
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{
					{ContainerPort: 80, Protocol: corev1.ProtocolTCP},
					{ContainerPort: 53, Protocol: corev1.ProtocolUDP},
				}
			},
		},
		{
			name: "hostNetwork copies container ports to host ports",
			in: func(p *corev1.Pod) {
				p.Spec.HostNetwork = true
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
			},
			want: func(p *corev1.Pod) {
				p.Spec.HostNetwork = true
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
			},
		},
		{
			name: "probes",
			in: func(p *corev1.Pod) {
				c := &p.Spec.Containers[0]
				c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}}
				c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}, PeriodSeconds: 2}
			},
			want: func(p *corev1.Pod) {
				c := &p.Spec.Containers[0]
				c.LivenessProbe = &corev1.Probe{
					ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80), Scheme: corev1.URISchemeHTTP}},
					TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
				}
				c.ReadinessProbe = &corev1.Probe{
					ProbeHandler:   corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}},
					TimeoutSeconds: 1, PeriodSeconds: 2, SuccessThreshold: 1, FailureThreshold: 3,
				}
			},
		},
		{
			name: "env fieldRef apiVersion",
			in: func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{
					{Name: "A", Value: "1"},
					{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
				}
			},
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{
					{Name: "A", Value: "1"},
					{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}},
				}
			},
		},
		{
			name: "requests default to limits",
			in: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")},
					Requests: corev1.ResourceList{"cpu": resource.MustParse("500m")},
				}
			},
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")},
					Requests: corev1.ResourceList{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("1Gi")},
				}
			},
		},
		{
			name: "quantities are rounded up to milli",
			in: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"cpu": resource.MustParse("100u")}
			},
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"cpu": resource.MustParse("1m")}
			},
		},
		{
			name: "volumes",
			in: func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{
					{Name: "scratch"},
					{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}},
					{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: new(int32(0o400))}}},
					{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var"}}},
				}
			},
			want: func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{
					{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, DefaultMode: new(int32(420))}}},
					{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: new(int32(0o400))}}},
					{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var", Type: new(corev1.HostPathUnset)}}},
				}
			},
		},
		{
			name: "system priority class",
			in:   func(p *corev1.Pod) { p.Spec.PriorityClassName = "system-node-critical" },
			want: func(p *corev1.Pod) {
				p.Spec.PriorityClassName = "system-node-critical"
				p.Spec.Priority = new(int32(2000001000))
				p.Spec.PreemptionPolicy = new(corev1.PreemptLowerPriority)
			},
		},
		{
			name: "user priority class is resolved elsewhere",
			in:   func(p *corev1.Pod) { p.Spec.PriorityClassName = "batch" },
			want: func(p *corev1.Pod) {
				p.Spec.PriorityClassName = "batch"
				p.Spec.Priority = nil
				p.Spec.PreemptionPolicy = nil
			},
		},
		{
			name: "no tolerations are added",
			in: func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
			},
			want: func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := minimalPod()
			tt.in(got)
			want := defaultedMinimalPod()
			tt.want(want)
			Default(got)
			if !apiequality.Semantic.DeepEqual(got, want) {
				t.Fatalf("Default mismatch (-want +got):\n%s", diff.Diff(want, got))
			}
		})
	}
}

func TestDefaultIsIdempotent(t *testing.T) {
	t.Parallel()
	pod := minimalPod()
	pod.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "busybox"}}
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"cpu": resource.MustParse("0.0005")}
	pod.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{}}}
	pod.Spec.Volumes = []corev1.Volume{{Name: "v"}, {Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}},
	}}}}

	objects := map[string]runtime.Object{
		"pod":            pod,
		"deployment":     minimalDeployment(),
		"replicaset":     minimalReplicaSet(),
		"service":        &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, SessionAffinity: corev1.ServiceAffinityClientIP, Ports: []corev1.ServicePort{{Port: 80}}}},
		"headless":       &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}},
		"namespace":      &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}},
		"secret":         &corev1.Secret{StringData: map[string]string{"a": "b"}},
		"endpoints":      &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 80}}}}},
		"endpointslice":  minimalEndpointSlice(),
		"priorityclass":  minimalPriorityClass(),
		"node (nothing)": &corev1.Node{},
	}
	for name, obj := range objects {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			Default(obj)
			once := obj.DeepCopyObject()
			Default(obj)
			if !apiequality.Semantic.DeepEqual(once, obj) {
				t.Fatalf("second Default changed the object:\n%s", diff.Diff(once, obj))
			}
		})
	}
}

func TestPullPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"nginx", corev1.PullAlways},
		{"nginx:latest", corev1.PullAlways},
		{"library/nginx", corev1.PullAlways},
		{"registry.example.com:5000/team/app", corev1.PullAlways},
		{"localhost:5000/app:latest", corev1.PullAlways},
		{"nginx:1.27", corev1.PullIfNotPresent},
		{"registry.example.com:5000/team/app:v2", corev1.PullIfNotPresent},
		{"nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullIfNotPresent},
		{"nginx:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullAlways},
		{"Registry.Example.com/app", corev1.PullAlways},
		{"Nginx", corev1.PullIfNotPresent}, // not a valid reference
		{"", corev1.PullIfNotPresent},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			t.Parallel()
			if got := pullPolicy(tt.image); got != tt.want {
				t.Fatalf("pullPolicy(%q) = %s, want %s", tt.image, got, tt.want)
			}
		})
	}
}

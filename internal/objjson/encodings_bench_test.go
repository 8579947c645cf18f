package objjson_test

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/internal/objjson"
)

// storedPod is the node-load benchmark's pod (test/bench benchPod) as the
// API server holds it once it is bound and running: defaults, the
// ServiceAccount plugin's token volume and mount when token is set, one
// managedFields entry, and the kubelet's status.
func storedPod(token bool) *corev1.Pod {
	exp, mode, grace := int64(3607), int32(420), int64(30)
	now := metav1.Now()
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "bench-000123", Namespace: "nodeload", UID: "0b0c3f4e-1111-2222-3333-444455556666",
			CreationTimestamp: now, Labels: map[string]string{"app": "bench", "pod-template-hash": "5d8f9c7b6"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "bench.test", Operation: "Update", APIVersion: "v1", Time: &now, FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}}}}}`)}}}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}},
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: "File", ImagePullPolicy: "IfNotPresent"}},
			RestartPolicy: "Always", TerminationGracePeriodSeconds: &grace, DNSPolicy: "ClusterFirst", SchedulerName: "default-scheduler",
			ServiceAccountName: "default", DeprecatedServiceAccount: "default", NodeName: "hollow-17", EnableServiceLinks: new(true),
			PreemptionPolicy: new(corev1.PreemptLowerPriority), Priority: new(int32(0)), SecurityContext: &corev1.PodSecurityContext{},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: new(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: new(int64(300))}},
		},
		Status: corev1.PodStatus{Phase: "Running", QOSClass: "Burstable", HostIP: "127.0.0.1", PodIP: "10.244.17.9", StartTime: &now,
			PodIPs:  []corev1.PodIP{{IP: "10.244.17.9"}},
			HostIPs: []corev1.HostIP{{IP: "127.0.0.1"}},
			Conditions: []corev1.PodCondition{
				{Type: "PodScheduled", Status: "True", LastTransitionTime: now},
				{Type: "Initialized", Status: "True", LastTransitionTime: now},
				{Type: "ContainersReady", Status: "True", LastTransitionTime: now},
				{Type: "Ready", Status: "True", LastTransitionTime: now}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, Started: new(true), Image: "registry.k8s.io/pause:3.10",
				ImageID:     "registry.k8s.io/pause@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a",
				ContainerID: "hollow://bench-000123-app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}},
		},
	}
	if token {
		c := &p.Spec.Containers[0]
		c.VolumeMounts = []corev1.VolumeMount{{Name: "kube-api-access-x7k2p", ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}
		p.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: &mode, Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		}}}}}
	}
	return p
}

// BenchmarkPodEncodings measures what a pass over a stored pod costs in
// the encoding kubebus stores and publishes (encoding/json out, this
// package's decoder in) against the protobuf encoding of k8s.io/api that
// upstream stores in etcd, for the node-load benchmark's pod with and
// without the ServiceAccount token volume. It reports each encoding's
// size.
func BenchmarkPodEncodings(b *testing.B) {
	for _, tc := range []struct {
		name  string
		token bool
	}{{"token", true}, {"notoken", false}} {
		p := storedPod(tc.token)
		js, err := json.Marshal(p)
		if err != nil {
			b.Fatal(err)
		}
		pb, err := p.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name+"/json-encode", func(b *testing.B) {
			for b.Loop() {
				if _, err := json.Marshal(p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(js)), "bytes")
		})
		b.Run(tc.name+"/json-decode", func(b *testing.B) {
			for b.Loop() {
				var out corev1.Pod
				if err := objjson.Unmarshal(js, &out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(js)), "bytes")
		})
		b.Run(tc.name+"/protobuf-encode", func(b *testing.B) {
			for b.Loop() {
				if _, err := p.Marshal(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(pb)), "bytes")
		})
		b.Run(tc.name+"/protobuf-decode", func(b *testing.B) {
			for b.Loop() {
				var out corev1.Pod
				if err := out.Unmarshal(pb); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(pb)), "bytes")
		})
	}
}

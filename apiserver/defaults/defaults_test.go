package defaults

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func minimalTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "nginx:1.27",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"memory": mustQuantity("64Mi")}},
		}}},
	}
}

// defaultedTemplate is minimalTemplate as stored upstream: pod spec defaults
// only; no service account, priority, enableServiceLinks or requests, which
// appear on the pods the controller creates.
func defaultedTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "app", Image: "nginx:1.27",
				Resources:                corev1.ResourceRequirements{Limits: corev1.ResourceList{"memory": mustQuantity("64Mi")}},
				ImagePullPolicy:          corev1.PullIfNotPresent,
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: new(int64(30)),
			DNSPolicy:                     corev1.DNSClusterFirst,
			SecurityContext:               &corev1.PodSecurityContext{},
			SchedulerName:                 "default-scheduler",
		},
	}
}

func minimalDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: minimalTemplate(),
		},
	}
}

func minimalReplicaSet() *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: minimalTemplate(),
		},
	}
}

func minimalEndpointSlice() *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-abc", Namespace: "default"},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Port: new(int32(80))}, {Name: new("dns"), Protocol: new(corev1.ProtocolUDP)}},
	}
}

func minimalPriorityClass() *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "batch"}, Value: 100}
}

func TestDefaultKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   runtime.Object
		want runtime.Object
	}{
		{
			name: "deployment",
			in:   minimalDeployment(),
			want: &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
				Spec: appsv1.DeploymentSpec{
					Replicas: new(int32(1)),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
					Template: defaultedTemplate(),
					Strategy: appsv1.DeploymentStrategy{
						Type: appsv1.RollingUpdateDeploymentStrategyType,
						RollingUpdate: &appsv1.RollingUpdateDeployment{
							MaxUnavailable: new(intstr.FromString("25%")),
							MaxSurge:       new(intstr.FromString("25%")),
						},
					},
					RevisionHistoryLimit:    new(int32(10)),
					ProgressDeadlineSeconds: new(int32(600)),
				},
			},
		},
		{
			name: "deployment with Recreate gets no rolling update",
			in: func() runtime.Object {
				d := minimalDeployment()
				d.Spec.Replicas = new(int32(0))
				d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
				return d
			}(),
			want: &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
				Spec: appsv1.DeploymentSpec{
					Replicas:                new(int32(0)),
					Selector:                &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
					Template:                defaultedTemplate(),
					Strategy:                appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
					RevisionHistoryLimit:    new(int32(10)),
					ProgressDeadlineSeconds: new(int32(600)),
				},
			},
		},
		{
			name: "replicaset",
			in:   minimalReplicaSet(),
			want: &appsv1.ReplicaSet{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
				Spec: appsv1.ReplicaSetSpec{
					Replicas: new(int32(1)),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
					Template: defaultedTemplate(),
				},
			},
		},
		{
			name: "pod template",
			in:   &corev1.PodTemplate{Template: minimalTemplate()},
			want: &corev1.PodTemplate{Template: defaultedTemplate()},
		},
		{
			name: "new namespace",
			in:   &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			want: &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"kubernetes.io/metadata.name": "team-a"}},
				Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
			},
		},
		{
			name: "finalized namespace keeps no finalizers",
			in: &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
			},
			want: &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"kubernetes.io/metadata.name": "team-a"}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
			},
		},
		{
			name: "secret",
			in:   &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}},
			want: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Type: corev1.SecretTypeOpaque},
		},
		{
			name: "secret stringData moves into data",
			in: &corev1.Secret{
				Data:       map[string][]byte{"user": []byte("old"), "host": []byte("db")},
				StringData: map[string]string{"user": "admin", "password": "s3cret"},
			},
			want: &corev1.Secret{
				Type: corev1.SecretTypeOpaque,
				Data: map[string][]byte{"user": []byte("admin"), "host": []byte("db"), "password": []byte("s3cret")},
			},
		},
		{
			name: "secret keeps its type",
			in:   &corev1.Secret{Type: corev1.SecretTypeTLS},
			want: &corev1.Secret{Type: corev1.SecretTypeTLS},
		},
		{
			name: "priority class",
			in:   minimalPriorityClass(),
			want: &schedulingv1.PriorityClass{
				ObjectMeta: metav1.ObjectMeta{Name: "batch"}, Value: 100,
				PreemptionPolicy: new(corev1.PreemptLowerPriority),
			},
		},
		{
			name: "endpoints",
			in: &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{
				Ports: []corev1.EndpointPort{{Port: 80}, {Port: 53, Protocol: corev1.ProtocolUDP}},
			}}},
			want: &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{
				Ports: []corev1.EndpointPort{{Port: 80, Protocol: corev1.ProtocolTCP}, {Port: 53, Protocol: corev1.ProtocolUDP}},
			}}},
		},
		{
			name: "endpointslice",
			in:   minimalEndpointSlice(),
			want: &discoveryv1.EndpointSlice{
				ObjectMeta:  metav1.ObjectMeta{Name: "web-abc", Namespace: "default"},
				AddressType: discoveryv1.AddressTypeIPv4,
				Ports: []discoveryv1.EndpointPort{
					{Name: new(""), Port: new(int32(80)), Protocol: new(corev1.ProtocolTCP)},
					{Name: new("dns"), Protocol: new(corev1.ProtocolUDP)},
				},
			},
		},
		{
			name: "node gets nothing",
			in:   &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{"cpu": mustQuantity("2")}}},
			want: &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{"cpu": mustQuantity("2")}}},
		},
		{
			name: "event gets nothing",
			in:   &corev1.Event{Reason: "Started"},
			want: &corev1.Event{Reason: "Started"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			Default(tt.in)
			if !apiequality.Semantic.DeepEqual(tt.in, tt.want) {
				t.Fatalf("Default mismatch (-want +got):\n%s", diff.Diff(tt.want, tt.in))
			}
		})
	}
}

func TestDefaultBindingSubjects(t *testing.T) {
	b := &rbacv1.RoleBinding{Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}, {Kind: "Group", Name: "devs"}, {Kind: "ServiceAccount", Name: "robot", Namespace: "ns"}}}
	Default(b)
	want := []string{rbacv1.GroupName, rbacv1.GroupName, ""}
	for i, s := range b.Subjects {
		if s.APIGroup != want[i] {
			t.Errorf("subject %d (%s) apiGroup = %q, want %q", i, s.Kind, s.APIGroup, want[i])
		}
	}
}

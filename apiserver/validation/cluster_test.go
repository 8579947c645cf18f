package validation

import (
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func resourceMust(s string) resource.Quantity { return resource.MustParse(s) }

var objMeta = metav1.ObjectMeta{Name: "a", Namespace: "default", ResourceVersion: "1"}

func TestValidateConfigAndSecrets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		obj   runtime.Object
		wants []want
	}{
		{"configmap", &corev1.ConfigMap{ObjectMeta: objMeta, Data: map[string]string{"app.conf": "x", "KEY_1": "y"}}, nil},
		{"configmap key", &corev1.ConfigMap{ObjectMeta: objMeta, Data: map[string]string{"a/b": "x"}}, []want{invalid("data[a/b]")}},
		{"configmap binary key", &corev1.ConfigMap{ObjectMeta: objMeta, BinaryData: map[string][]byte{"": nil}}, []want{invalid("binaryData[]")}},
		{"configmap key in both", &corev1.ConfigMap{ObjectMeta: objMeta, Data: map[string]string{"k": "x"}, BinaryData: map[string][]byte{"k": nil}}, []want{invalid("data[k]")}},
		{"configmap size", &corev1.ConfigMap{ObjectMeta: objMeta, Data: map[string]string{
			"a": strings.Repeat("x", 600<<10), "b": strings.Repeat("x", 600<<10),
		}}, []want{tooLong("data")}},
		{"secret", defaulted(&corev1.Secret{ObjectMeta: objMeta, Data: map[string][]byte{"password": []byte("x")}}), nil},
		{"secret key", defaulted(&corev1.Secret{ObjectMeta: objMeta, Data: map[string][]byte{"pass word": nil}}), []want{invalid("data[pass word]")}},
		{"secret size", defaulted(&corev1.Secret{ObjectMeta: objMeta, Data: map[string][]byte{"a": make([]byte, 1<<20+1)}}), []want{tooLong("data")}},
		{"tls secret", &corev1.Secret{ObjectMeta: objMeta, Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil}}, []want{required("data[tls.key]")}},
		{"docker config secret", &corev1.Secret{ObjectMeta: objMeta, Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockerconfigjson": []byte("{")}}, []want{
			invalid("data[.dockerconfigjson]"),
		}},
		{"token secret", &corev1.Secret{ObjectMeta: objMeta, Type: corev1.SecretTypeServiceAccountToken}, []want{
			required("metadata.annotations[kubernetes.io/service-account.name]"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			expectErrors(t, ValidateCreate(tt.obj), tt.wants...)
		})
	}
}

func TestValidateConfigUpdate(t *testing.T) {
	t.Parallel()
	immutable := &corev1.ConfigMap{ObjectMeta: objMeta, Immutable: new(true), Data: map[string]string{"k": "v"}}
	immutableSecret := &corev1.Secret{ObjectMeta: objMeta, Type: corev1.SecretTypeOpaque, Immutable: new(true), Data: map[string][]byte{"k": []byte("v")}}
	tests := []struct {
		name     string
		obj, old runtime.Object
		wants    []want
	}{
		{"mutable configmap data may change",
			&corev1.ConfigMap{ObjectMeta: objMeta, Data: map[string]string{"k": "w"}},
			&corev1.ConfigMap{ObjectMeta: objMeta, Data: map[string]string{"k": "v"}}, nil},
		{"immutable configmap labels may change",
			func() runtime.Object { c := immutable.DeepCopy(); c.Labels = map[string]string{"a": "b"}; return c }(), immutable, nil},
		{"immutable configmap data is fixed",
			&corev1.ConfigMap{ObjectMeta: objMeta, Immutable: new(true), Data: map[string]string{"k": "w"}}, immutable, []want{forbidden("data")}},
		{"immutable configmap stays immutable",
			&corev1.ConfigMap{ObjectMeta: objMeta, Immutable: new(false), Data: map[string]string{"k": "v"}}, immutable, []want{forbidden("immutable")}},
		{"a configmap may become immutable",
			immutable, &corev1.ConfigMap{ObjectMeta: objMeta, Data: map[string]string{"k": "v"}}, nil},
		{"immutable secret data is fixed",
			&corev1.Secret{ObjectMeta: objMeta, Type: corev1.SecretTypeOpaque, Immutable: new(true)}, immutableSecret, []want{forbidden("data")}},
		{"secret type is immutable",
			&corev1.Secret{ObjectMeta: objMeta, Type: "example.com/token", Data: map[string][]byte{"k": []byte("v")}},
			&corev1.Secret{ObjectMeta: objMeta, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("v")}}, []want{invalid("type")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			expectErrors(t, ValidateUpdate(tt.obj, tt.old), tt.wants...)
		})
	}
}

func TestValidateClusterKinds(t *testing.T) {
	t.Parallel()
	node := func(change func(*corev1.Node)) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", ResourceVersion: "1"}}
		change(n)
		return n
	}
	lease := func(change func(*coordinationv1.Lease)) *coordinationv1.Lease {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "kube-node-lease"}}
		change(l)
		return l
	}
	pc := func(name string, value int32) *schedulingv1.PriorityClass {
		return defaulted(&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value})
	}
	tests := []struct {
		name  string
		obj   runtime.Object
		wants []want
	}{
		{"namespace", defaulted(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}), nil},
		{"namespace finalizer", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: corev1.NamespaceSpec{
			Finalizers: []corev1.FinalizerName{"kubernetes", "cleanup"},
		}}, []want{invalid("spec.finalizers[1]")}},
		{"node", node(func(n *corev1.Node) {
			n.Spec.PodCIDRs = []string{"10.244.1.0/24", "fd00:1::/64"}
			n.Spec.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
		}), nil},
		{"node taint effect", node(func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: "Never"}} }), []want{notSupported("spec.taints[0].effect")}},
		{"node taints are unique", node(func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}, {Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}}
		}), []want{duplicate("spec.taints[1]")}},
		{"node pod CIDR", node(func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.244.1.1/24"} }), []want{invalid("spec.podCIDRs[0]")}},
		{"node pod CIDRs of two families", node(func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.244.1.0/24", "10.244.2.0/24"} }), []want{invalid("spec.podCIDRs")}},
		{"node capacity", node(func(n *corev1.Node) {
			n.Status.Capacity = corev1.ResourceList{"pods": resourceMust("110.5")}
		}), []want{invalid("status.capacity[pods]")}},
		{"lease", lease(func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = new(int32(40)) }), nil},
		{"lease duration", lease(func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = new(int32(0)) }), []want{invalid("spec.leaseDurationSeconds")}},
		{"lease transitions", lease(func(l *coordinationv1.Lease) { l.Spec.LeaseTransitions = new(int32(-1)) }), []want{invalid("spec.leaseTransitions")}},
		{"priority class", pc("high", 1000000), nil},
		{"user priority limit", pc("huge", 1000000001), []want{forbidden("value")}},
		{"system priority class", pc("system-node-critical", 2000001000), nil},
		{"system names are reserved", pc("system-mine", 10), []want{forbidden("metadata.name")}},
		{"preemption policy", func() runtime.Object {
			p := pc("high", 10)
			p.PreemptionPolicy = new(corev1.PreemptionPolicy("Always"))
			return p
		}(), []want{notSupported("preemptionPolicy")}},
		{"event", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.17a", Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"}}, nil},
		{"event namespace matches its object", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.17a", Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "other", Name: "web"}}, []want{invalid("involvedObject.namespace")}},
		{"event about a cluster object lives in default", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "n.17a", Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}, nil},
		{"new-style event needs a reporter", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.17a", Namespace: "default"},
			EventTime:      metav1.NewMicroTime(metav1.Now().Time),
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
			Action:         "Binding", Reason: "Scheduled"}, []want{required("reportingComponent"), required("reportingInstance")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			expectErrors(t, ValidateCreate(tt.obj), tt.wants...)
		})
	}
}

func TestValidateClusterUpdates(t *testing.T) {
	t.Parallel()
	oldNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", ResourceVersion: "1"},
		Spec: corev1.NodeSpec{PodCIDRs: []string{"10.244.1.0/24"}, ProviderID: "kubebus://node-1"}}
	oldPC := defaulted(&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high", ResourceVersion: "1"}, Value: 100})
	tests := []struct {
		name     string
		obj, old runtime.Object
		wants    []want
	}{
		{"node may be cordoned", func() runtime.Object { n := oldNode.DeepCopy(); n.Spec.Unschedulable = true; return n }(), oldNode, nil},
		{"node pod CIDR is fixed", func() runtime.Object { n := oldNode.DeepCopy(); n.Spec.PodCIDRs = []string{"10.244.2.0/24"}; return n }(), oldNode, []want{
			forbidden("spec.podCIDRs"),
		}},
		{"node pod CIDR may be set once", oldNode, func() runtime.Object { n := oldNode.DeepCopy(); n.Spec.PodCIDRs = nil; return n }(), nil},
		{"node provider ID is fixed", func() runtime.Object { n := oldNode.DeepCopy(); n.Spec.ProviderID = "x"; return n }(), oldNode, []want{
			forbidden("spec.providerID"),
		}},
		{"priority value is fixed", func() runtime.Object { p := oldPC.DeepCopy(); p.Value = 200; return p }(), oldPC, []want{forbidden("value")}},
		{"priority description may change", func() runtime.Object { p := oldPC.DeepCopy(); p.Description = "x"; return p }(), oldPC, nil},
		{"preemption policy is fixed", func() runtime.Object {
			p := oldPC.DeepCopy()
			p.PreemptionPolicy = new(corev1.PreemptNever)
			return p
		}(), oldPC, []want{invalid("preemptionPolicy")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			expectErrors(t, ValidateUpdate(tt.obj, tt.old), tt.wants...)
		})
	}
}

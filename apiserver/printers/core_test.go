package printers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func readyCondition(s corev1.ConditionStatus) []corev1.NodeCondition {
	return []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
		{Type: corev1.NodeReady, Status: s},
	}
}

func TestNodeCells(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		node corev1.Node
		want map[string]interface{}
	}{
		{
			name: "ready",
			node: corev1.Node{Status: corev1.NodeStatus{Conditions: readyCondition(corev1.ConditionTrue)}},
			want: map[string]interface{}{"STATUS": "Ready", "ROLES": "<none>"},
		},
		{
			name: "not ready",
			node: corev1.Node{Status: corev1.NodeStatus{Conditions: readyCondition(corev1.ConditionFalse)}},
			want: map[string]interface{}{"STATUS": "NotReady"},
		},
		{
			name: "ready condition unknown",
			node: corev1.Node{Status: corev1.NodeStatus{Conditions: readyCondition(corev1.ConditionUnknown)}},
			want: map[string]interface{}{"STATUS": "NotReady"},
		},
		{
			name: "no ready condition",
			node: corev1.Node{},
			want: map[string]interface{}{"STATUS": "Unknown"},
		},
		{
			name: "cordoned",
			node: corev1.Node{Spec: corev1.NodeSpec{Unschedulable: true}, Status: corev1.NodeStatus{Conditions: readyCondition(corev1.ConditionTrue)}},
			want: map[string]interface{}{"STATUS": "Ready,SchedulingDisabled"},
		},
		{
			name: "cordoned and not ready",
			node: corev1.Node{Spec: corev1.NodeSpec{Unschedulable: true}, Status: corev1.NodeStatus{Conditions: readyCondition(corev1.ConditionFalse)}},
			want: map[string]interface{}{"STATUS": "NotReady,SchedulingDisabled"},
		},
		{
			name: "cordoned without conditions",
			node: corev1.Node{Spec: corev1.NodeSpec{Unschedulable: true}},
			want: map[string]interface{}{"STATUS": "Unknown,SchedulingDisabled"},
		},
		{
			name: "roles sorted, both label forms, empty role ignored",
			node: corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
				"node-role.kubernetes.io/worker":        "",
				"node-role.kubernetes.io/control-plane": "",
				"node-role.kubernetes.io/":              "",
				"kubernetes.io/role":                    "ingress",
				"kubernetes.io/hostname":                "node-a",
			}}},
			want: map[string]interface{}{"ROLES": "control-plane,ingress,worker"},
		},
		{
			name: "same role in both forms",
			node: corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
				"node-role.kubernetes.io/worker": "", "kubernetes.io/role": "worker"}}},
			want: map[string]interface{}{"ROLES": "worker"},
		},
		{
			name: "wide fields",
			node: corev1.Node{
				ObjectMeta: metav1.ObjectMeta{CreationTimestamp: ago(10 * 24 * time.Hour)},
				Status: corev1.NodeStatus{
					Addresses: []corev1.NodeAddress{
						{Type: corev1.NodeHostName, Address: "node-a"},
						{Type: corev1.NodeInternalIP, Address: "192.168.1.10"},
						{Type: corev1.NodeInternalIP, Address: "fd00::10"},
						{Type: corev1.NodeExternalIP, Address: "203.0.113.10"},
					},
					NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OSImage: "Debian GNU/Linux 13",
						KernelVersion: "6.12.0", ContainerRuntimeVersion: "containerd://2.1.0"},
				},
			},
			want: map[string]interface{}{"AGE": "10d", "VERSION": "v1.37.2", "INTERNAL-IP": "192.168.1.10",
				"EXTERNAL-IP": "203.0.113.10", "OS-IMAGE": "Debian GNU/Linux 13", "KERNEL-VERSION": "6.12.0",
				"CONTAINER-RUNTIME": "containerd://2.1.0"},
		},
		{
			name: "wide fields missing",
			node: corev1.Node{},
			want: map[string]interface{}{"VERSION": "", "INTERNAL-IP": "<none>", "EXTERNAL-IP": "<none>",
				"OS-IMAGE": "<unknown>", "KERNEL-VERSION": "<unknown>", "CONTAINER-RUNTIME": "<unknown>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkCells(t, schema.GroupKind{Kind: "Node"}, &tt.node, tt.want)
		})
	}
}

func TestSimpleCoreCells(t *testing.T) {
	t.Parallel()
	created := metav1.ObjectMeta{Name: "x", CreationTimestamp: ago(5 * time.Minute)}
	tests := []struct {
		name string
		kind string
		obj  runtime.Object
		want []interface{}
	}{
		{"namespace active", "Namespace",
			&corev1.Namespace{ObjectMeta: created, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
			[]interface{}{"x", "Active", "5m"}},
		{"namespace terminating", "Namespace",
			&corev1.Namespace{ObjectMeta: created, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
			[]interface{}{"x", "Terminating", "5m"}},
		{"configmap counts data and binaryData", "ConfigMap",
			&corev1.ConfigMap{ObjectMeta: created, Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"c": {1}}},
			[]interface{}{"x", int64(3), "5m"}},
		{"empty configmap", "ConfigMap", &corev1.ConfigMap{ObjectMeta: created},
			[]interface{}{"x", int64(0), "5m"}},
		{"secret", "Secret",
			&corev1.Secret{ObjectMeta: created, Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil, "tls.key": nil}},
			[]interface{}{"x", "kubernetes.io/tls", int64(2), "5m"}},
		{"service account", "ServiceAccount",
			&corev1.ServiceAccount{ObjectMeta: created, Secrets: []corev1.ObjectReference{{Name: "token"}}},
			[]interface{}{"x", int64(1), "5m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := cellsFor(t, schema.GroupKind{Kind: tt.kind}, tt.obj)
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Errorf("cell %d = %#v, want %#v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestEventCells(t *testing.T) {
	t.Parallel()
	pod := corev1.ObjectReference{Kind: "Pod", Name: "web-1", FieldPath: "spec.containers{web}"}
	tests := []struct {
		name string
		ev   corev1.Event
		want map[string]interface{}
	}{
		{
			name: "classic event",
			ev: corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Name: "web-1.17a"},
				InvolvedObject: pod, Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container\n",
				Source:         corev1.EventSource{Component: "kubelet", Host: "node-a"},
				FirstTimestamp: ago(time.Hour), LastTimestamp: ago(30 * time.Second), Count: 7,
			},
			want: map[string]interface{}{
				"LAST SEEN": "30s", "TYPE": "Warning", "REASON": "BackOff", "OBJECT": "pod/web-1",
				"SUBOBJECT": "spec.containers{web}", "SOURCE": "kubelet, node-a",
				"MESSAGE": "Back-off restarting failed container", "FIRST SEEN": "60m", "COUNT": int64(7), "NAME": "web-1.17a",
			},
		},
		{
			name: "no host",
			ev: corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Name: "web"},
				Source: corev1.EventSource{Component: "deployment-controller"}, FirstTimestamp: ago(time.Minute), LastTimestamp: ago(time.Minute), Count: 1},
			want: map[string]interface{}{"OBJECT": "deployment/web", "SOURCE": "deployment-controller", "COUNT": int64(1)},
		},
		{
			name: "new-style event: reporting fields, event time, no count",
			ev: corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-2"},
				ReportingController: "default-scheduler", ReportingInstance: "scheduler-1",
				EventTime: metav1.NewMicroTime(now.Add(-4 * time.Hour))},
			want: map[string]interface{}{"SOURCE": "default-scheduler, scheduler-1", "FIRST SEEN": "4h", "LAST SEEN": "4h", "COUNT": int64(1)},
		},
		{
			name: "series",
			ev: corev1.Event{InvolvedObject: pod, EventTime: metav1.NewMicroTime(now.Add(-3 * time.Hour)),
				Series: &corev1.EventSeries{Count: 12, LastObservedTime: metav1.NewMicroTime(now.Add(-90 * time.Second))}},
			want: map[string]interface{}{"FIRST SEEN": "3h", "LAST SEEN": "90s", "COUNT": int64(12)},
		},
		{
			name: "object without name, no times",
			ev:   corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Node"}},
			want: map[string]interface{}{"OBJECT": "node", "LAST SEEN": "<unknown>", "FIRST SEEN": "<unknown>", "SOURCE": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkCells(t, schema.GroupKind{Kind: "Event"}, &tt.ev, tt.want)
		})
	}
}

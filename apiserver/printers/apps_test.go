package printers

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func int32Ptr(v int32) *int32 { return &v }

func template(names ...string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: containers(names...)}}
}

func TestDeploymentCells(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    appsv1.Deployment
		want map[string]interface{}
	}{
		{
			name: "partly ready",
			d: appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: ago(2 * time.Hour)},
				Spec: appsv1.DeploymentSpec{Replicas: int32Ptr(3), Template: template("web", "log"),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
				Status: appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2},
			},
			want: map[string]interface{}{"NAME": "web", "READY": "2/3", "UP-TO-DATE": int64(3), "AVAILABLE": int64(2), "AGE": "120m",
				"CONTAINERS": "web,log", "IMAGES": "web:latest,log:latest", "SELECTOR": "app=web"},
		},
		{
			name: "scaled to zero",
			d:    appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: int32Ptr(0), Selector: &metav1.LabelSelector{}}},
			want: map[string]interface{}{"READY": "0/0", "UP-TO-DATE": int64(0), "CONTAINERS": "", "SELECTOR": ""},
		},
		{
			name: "unset replicas, expression selector",
			d: appsv1.Deployment{Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front", "back"}}}}},
				Status: appsv1.DeploymentStatus{ReadyReplicas: 1}},
			want: map[string]interface{}{"READY": "1/0", "SELECTOR": "tier in (back,front)"},
		},
		{
			name: "invalid selector",
			d: appsv1.Deployment{Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "tier", Operator: "Near"}}}}},
			want: map[string]interface{}{"SELECTOR": "<invalid>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkCells(t, schema.GroupKind{Group: "apps", Kind: "Deployment"}, &tt.d, tt.want)
		})
	}
}

func TestReplicaSetCells(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		rs   appsv1.ReplicaSet
		want []interface{}
	}{
		{
			name: "scaling up",
			rs: appsv1.ReplicaSet{
				ObjectMeta: metav1.ObjectMeta{Name: "web-7d9f", CreationTimestamp: ago(45 * time.Second)},
				Spec: appsv1.ReplicaSetSpec{Replicas: int32Ptr(5), Template: template("web"),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "pod-template-hash": "7d9f"}}},
				Status: appsv1.ReplicaSetStatus{Replicas: 4, ReadyReplicas: 1},
			},
			want: []interface{}{"web-7d9f", int64(5), int64(4), int64(1), "45s", "web", "web:latest", "app=web,pod-template-hash=7d9f"},
		},
		{
			name: "unset replicas and empty selector",
			rs:   appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "old"}, Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{}}},
			want: []interface{}{"old", int64(0), int64(0), int64(0), "<unknown>", "", "", "<none>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := cellsFor(t, schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, &tt.rs)
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Errorf("cell %d = %#v, want %#v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

package printers

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestStatefulSetCells(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		s    appsv1.StatefulSet
		want map[string]interface{}
	}{
		{"rolling out", appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: ago(90 * time.Second)},
			Spec:       appsv1.StatefulSetSpec{Replicas: int32Ptr(3), Template: template("web", "log")},
			Status:     appsv1.StatefulSetStatus{ReadyReplicas: 2},
		}, map[string]interface{}{"NAME": "web", "READY": "2/3", "AGE": "90s", "CONTAINERS": "web,log", "IMAGES": "web:latest,log:latest"}},
		{"unset replicas", appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"}},
			map[string]interface{}{"NAME": "db", "READY": "0/0", "AGE": "<unknown>", "CONTAINERS": ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkCells(t, schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, &tt.s, tt.want)
		})
	}
}

func TestControllerRevisionCells(t *testing.T) {
	t.Parallel()
	yes := true
	for _, tt := range []struct {
		name string
		c    appsv1.ControllerRevision
		want map[string]interface{}
	}{
		{"owned by a StatefulSet", appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Name: "web-6b8c", CreationTimestamp: ago(3 * time.Minute),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", Controller: &yes}}},
			Revision: 2,
		}, map[string]interface{}{"NAME": "web-6b8c", "CONTROLLER": "statefulset.apps/web", "REVISION": int64(2), "AGE": "3m"}},
		{"core owner", appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Name: "x", OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", Controller: &yes}}},
		}, map[string]interface{}{"CONTROLLER": "pod/p", "REVISION": int64(0)}},
		{"orphan", appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "y",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "not-controller"}}}},
			map[string]interface{}{"CONTROLLER": "<none>"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkCells(t, schema.GroupKind{Group: "apps", Kind: "ControllerRevision"}, &tt.c, tt.want)
		})
	}
}

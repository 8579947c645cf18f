package rootcacert

import (
	"context"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubebus/kubebus/controllers"
)

const caPEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

// store is a cache the test fills.
type store[T metav1.Object] map[string]T

func (s store[T]) Get(ns, name string) (T, bool) { v, ok := s[ns+"/"+name]; return v, ok }

func newStore[T metav1.Object](objs ...T) store[T] {
	s := store[T]{}
	for _, o := range objs {
		s[o.GetNamespace()+"/"+o.GetName()] = o
	}
	return s
}

func published(change func(*corev1.ConfigMap)) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: "ns", ResourceVersion: "4",
			Annotations: map[string]string{DescriptionAnnotation: Description}},
		Data: map[string]string{DataKey: caPEM},
	}
	change(cm)
	return cm
}

func TestReconcile(t *testing.T) {
	t.Parallel()
	active := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	terminating := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	tests := []struct {
		name      string
		namespace *corev1.Namespace
		cm        *corev1.ConfigMap
		wantVerb  string // "" for no write
	}{
		{name: "missing is created", namespace: active, wantVerb: "create"},
		{name: "up to date", namespace: active, cm: published(func(*corev1.ConfigMap) {})},
		{name: "changed data is restored", namespace: active, cm: published(func(cm *corev1.ConfigMap) { cm.Data[DataKey] = "tampered" }), wantVerb: "update"},
		{name: "extra key is removed", namespace: active, cm: published(func(cm *corev1.ConfigMap) { cm.Data["extra"] = "x" }), wantVerb: "update"},
		{name: "missing description is restored", namespace: active, cm: published(func(cm *corev1.ConfigMap) { cm.Annotations = nil }), wantVerb: "update"},
		{name: "another description is kept", namespace: active, cm: published(func(cm *corev1.ConfigMap) { cm.Annotations[DescriptionAnnotation] = "mine" })},
		{name: "terminating namespace", namespace: terminating},
		{name: "no namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			client := fake.NewClientset()
			cms := newStore[*corev1.ConfigMap]()
			if tt.cm != nil {
				cms = newStore(tt.cm)
				client = fake.NewClientset(tt.cm.DeepCopy())
			}
			nss := newStore[*corev1.Namespace]()
			if tt.namespace != nil {
				nss = newStore(tt.namespace)
			}
			r := &reconciler{client: client, namespaces: nss, configMaps: cms, data: map[string]string{DataKey: caPEM}, log: slog.New(slog.DiscardHandler)}
			if _, err := r.Reconcile(context.Background(), controllers.Request{Name: "ns"}); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			var writes []k8stesting.Action
			for _, a := range client.Actions() {
				if a.GetVerb() == "create" || a.GetVerb() == "update" {
					writes = append(writes, a)
				}
			}
			if tt.wantVerb == "" {
				if len(writes) != 0 {
					t.Fatalf("writes = %v, want none", writes)
				}
				return
			}
			if len(writes) != 1 || writes[0].GetVerb() != tt.wantVerb {
				t.Fatalf("writes = %v, want one %s", writes, tt.wantVerb)
			}
			cm := writes[0].(k8stesting.CreateAction).GetObject().(*corev1.ConfigMap)
			if cm.Name != ConfigMapName || cm.Namespace != "ns" || len(cm.Data) != 1 || cm.Data[DataKey] != caPEM ||
				cm.Annotations[DescriptionAnnotation] != Description {
				t.Fatalf("written configmap = %+v", cm)
			}
			if tt.wantVerb == "update" && cm.ResourceVersion != "4" {
				t.Fatalf("update without the cached resourceVersion: %q", cm.ResourceVersion)
			}
		})
	}
}

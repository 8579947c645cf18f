package admission_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/admission"
	"github.com/kubebus/kubebus/apiserver/storage"
	"github.com/kubebus/kubebus/test/harness"
)

func quantities(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// TestIntegrationLimitRangeDefaults creates LimitRanges and then pods
// without resources through an in-process API server whose admission
// chain holds LimitRanger: the ranges are stored defaulted, and the pods
// get their containers' requests and limits from those defaults.
func TestIntegrationLimitRangeDefaults(t *testing.T) {
	harness.SkipShort(t)
	ctx := context.Background()
	objs := &serverObjects{}
	cs, srv := startAPIServer(t, func(*storage.Store) admission.Chain {
		return admission.Chain{admission.NewLimitRanger(objs)}
	})
	objs.srv.Store(srv)

	tests := []struct {
		namespace   string
		item        corev1.LimitRangeItem
		wantDefault corev1.ResourceList // the stored item's default and defaultRequest
		wantPod     corev1.ResourceRequirements
	}{
		{
			namespace:   "max-only",
			item:        corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: quantities("cpu", "500m")},
			wantDefault: quantities("cpu", "500m"),
			wantPod:     corev1.ResourceRequirements{Requests: quantities("cpu", "500m"), Limits: quantities("cpu", "500m")},
		},
		{
			namespace:   "default-only",
			item:        corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: quantities("memory", "256Mi")},
			wantDefault: quantities("memory", "256Mi"),
			wantPod:     corev1.ResourceRequirements{Requests: quantities("memory", "256Mi"), Limits: quantities("memory", "256Mi")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.namespace, func(t *testing.T) {
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tt.namespace}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			lr, err := cs.CoreV1().LimitRanges(tt.namespace).Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits"},
				Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{tt.item}}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			stored, err := cs.CoreV1().LimitRanges(tt.namespace).Get(ctx, "limits", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, got := range []*corev1.LimitRange{lr, stored} {
				item := got.Spec.Limits[0]
				if !apiequality.Semantic.DeepEqual(item.Default, tt.wantDefault) || !apiequality.Semantic.DeepEqual(item.DefaultRequest, tt.wantDefault) {
					t.Fatalf("default %v, defaultRequest %v, want both %v", item.Default, item.DefaultRequest, tt.wantDefault)
				}
			}
			pod, err := cs.CoreV1().Pods(tt.namespace).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("creating a pod without resources: %v", err)
			}
			if got := pod.Spec.Containers[0].Resources; !apiequality.Semantic.DeepEqual(got, tt.wantPod) {
				t.Errorf("resources = %+v, want %+v", got, tt.wantPod)
			}
		})
	}
}

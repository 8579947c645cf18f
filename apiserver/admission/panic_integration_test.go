package admission_test

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/admission"
	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/storage"
	"github.com/kubebus/kubebus/test/harness"
)

// panicOnName is the test hook: it panics on a pod of one name.
type panicOnName struct {
	name  string
	calls atomic.Int32
}

func (p *panicOnName) Admit(_ context.Context, req *auth.AdmissionRequest) error {
	p.calls.Add(1)
	if pod, ok := req.Object.(*corev1.Pod); ok && pod.Name == p.name {
		panic("admission hook panics on purpose")
	}
	return nil
}

// TestIntegrationAdmissionPanic: through an in-process API server, a
// create whose admission panics gets a 500 InternalError Status and is not
// stored, and the server goes on serving the next request.
func TestIntegrationAdmissionPanic(t *testing.T) {
	harness.SkipShort(t)
	ctx := context.Background()
	hook := &panicOnName{name: "boom"}
	cs, _ := startAPIServer(t, func(*storage.Store) admission.Chain { return admission.Chain{hook} })
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}}
	}

	_, err := cs.CoreV1().Pods("default").Create(ctx, pod("boom"), metav1.CreateOptions{})
	if !apierrors.IsInternalError(err) {
		t.Fatalf("create of the panicking pod: %v, want a 500 InternalError", err)
	}
	if se, ok := err.(apierrors.APIStatus); !ok || se.Status().Code != 500 {
		t.Fatalf("status = %#v, want code 500", err)
	}
	if _, err := cs.CoreV1().Pods("default").Get(ctx, "boom", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the rejected pod: %v, want NotFound", err)
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("fine"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the next create: %v", err)
	}
	if hook.calls.Load() < 2 {
		t.Errorf("admission ran %d times, want at least 2", hook.calls.Load())
	}
}

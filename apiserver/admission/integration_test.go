package admission_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubebus/kubebus/apiserver"
	"github.com/kubebus/kubebus/apiserver/admission"
	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/resource"
	"github.com/kubebus/kubebus/apiserver/storage"
	"github.com/kubebus/kubebus/test/harness"
)

// TestIntegrationDefaultTolerationSeconds creates pods through an in-process
// API server whose admission chain holds the plugin.
func TestIntegrationDefaultTolerationSeconds(t *testing.T) {
	harness.SkipShort(t)
	ctx := context.Background()
	sixty := int64(60)
	cs, _ := startAPIServer(t, func(*storage.Store) admission.Chain {
		return admission.Chain{admission.DefaultTolerationSeconds{Unreachable: &sixty}}
	})

	pod := func(name string, tols ...corev1.Toleration) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Tolerations: tols, Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}}
	}
	created, err := cs.CoreV1().Pods("default").Create(ctx, pod("plain"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, tol := range created.Spec.Tolerations {
		if tol.Effect == corev1.TaintEffectNoExecute && tol.Operator == corev1.TolerationOpExists && tol.TolerationSeconds != nil {
			got[tol.Key] = *tol.TolerationSeconds
		}
	}
	if len(created.Spec.Tolerations) != 2 || got[corev1.TaintNodeNotReady] != 300 || got[corev1.TaintNodeUnreachable] != 60 {
		t.Fatalf("tolerations = %+v, want not-ready for 300s and unreachable for 60s", created.Spec.Tolerations)
	}

	// A pod that tolerates everything gets nothing more.
	created, err = cs.CoreV1().Pods("default").Create(ctx, pod("daemon", corev1.Toleration{Operator: corev1.TolerationOpExists}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.Spec.Tolerations) != 1 {
		t.Fatalf("tolerations = %+v, want only the pod's own", created.Spec.Tolerations)
	}

	// Updates leave tolerations alone, and the stored pod has them.
	stored, err := cs.CoreV1().Pods("default").Get(ctx, "plain", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored.Labels = map[string]string{"x": "y"}
	updated, err := cs.CoreV1().Pods("default").Update(ctx, stored, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(updated.Spec.Tolerations) != 2 {
		t.Fatalf("tolerations after update = %+v", updated.Spec.Tolerations)
	}
}

// startAPIServer runs an in-process API server on a fresh etcd whose
// admission chain is the one chain makes of its store, and returns a
// client of it and the server.
func startAPIServer(t *testing.T, chain func(*storage.Store) admission.Chain) (kubernetes.Interface, *apiserver.Server) {
	t.Helper()
	return startAPIServerAdmitting(t, func(s *storage.Store) auth.Admitter { return chain(s) })
}

// startAPIServerAdmitting is startAPIServer with any admitter, such as a
// Timed chain, which runs its mutating and validating steps apart.
func startAPIServerAdmitting(t *testing.T, chain func(*storage.Store) auth.Admitter) (kubernetes.Interface, *apiserver.Server) {
	t.Helper()
	etcd := harness.StartEtcd(t)
	store, err := storage.New(storage.Config{Endpoints: []string{etcd.Endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	srv, err := apiserver.New(apiserver.Config{Store: store, Resources: resource.Builtin(),
		Logger: slog.New(slog.DiscardHandler), Admission: chain(store)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	return cs, srv
}

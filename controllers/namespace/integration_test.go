package namespace

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/kubebus/kubebus/apiserver/resource"
	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/garbagecollector"
	"github.com/kubebus/kubebus/test/harness"
)

type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// env is the namespace controller and the garbage collector (whose
// metadata caches it reads) running against a server, as in the
// controller-manager.
type env struct {
	cs  kubernetes.Interface
	gc  *garbagecollector.GC
	ctx context.Context
}

func start(t *testing.T, s *harness.Server, writeConditions bool) *env {
	t.Helper()
	log := slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	_, js := s.BusConnect(t, "system:kube-controller-manager")
	cs := s.Clientset(t)
	md, err := metadata.NewForConfig(s.RESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rec, stopRec := controllers.Recorder(ctx, cs, "namespace-controller")

	var all []garbagecollector.Resource
	for _, r := range resource.Builtin() {
		if r.CreateOnly {
			continue // reviews are answered, never stored
		}
		all = append(all, garbagecollector.Resource{Group: r.GVK.Group, Version: r.GVK.Version, Resource: r.Plural, Kind: r.GVK.Kind, Namespaced: r.Namespaced})
	}
	gc, err := garbagecollector.New(garbagecollector.Config{JetStream: js, Resources: all, Client: md, Recorder: rec, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	namespaces, err := informer.New(informer.Config[*corev1.Namespace]{JetStream: js, Component: "t-namespace", Resource: "namespaces",
		New: func() *corev1.Namespace { return &corev1.Namespace{} }, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	var contents []Resource
	for _, r := range all {
		if r.Namespaced {
			contents = append(contents, Resource{GVR: r.GVR(), Objects: gc.Informer(r.GVR())})
		}
	}
	nsc, err := New(Config{Namespaces: namespaces, Resources: contents, Client: cs, Metadata: md, Recorder: rec,
		PollInterval: 100 * time.Millisecond, WriteConditions: writeConditions, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	mgr := &controllers.Manager{Client: cs, Lease: controllers.LeaseConfig{Disabled: true}, Logger: log}
	mgr.AddCache(namespaces)
	for _, c := range gc.Caches() {
		mgr.AddCache(c)
	}
	mgr.Add(gc)
	mgr.Add(nsc)
	done := make(chan error, 1)
	go func() { done <- mgr.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		stopRec()
	})
	return &env{cs: cs, gc: gc, ctx: context.Background()}
}

// populate creates a namespace with objects of several resources, some
// owning others, and waits until the caches hold them all.
func (e *env) populate(t *testing.T, ns string, finalizers ...string) {
	t.Helper()
	if _, err := e.cs.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var owner types.UID
	for i := range 3 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}
		if i == 0 {
			cm.Finalizers = finalizers
		} else {
			cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "cm-0", UID: owner}}
		}
		out, err := e.cs.CoreV1().ConfigMaps(ns).Create(e.ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			owner = out.UID
		}
	}
	for i := range 2 {
		if _, err := e.cs.CoreV1().Secrets(ns).Create(e.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	if _, err := e.cs.CoreV1().Pods(ns).Create(e.ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().ServiceAccounts(ns).Create(e.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoordinationV1().Leases(ns).Create(e.ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[schema.GroupVersionResource]int{
		{Version: "v1", Resource: "configmaps"}:                           3,
		{Version: "v1", Resource: "secrets"}:                              2,
		{Version: "v1", Resource: "pods"}:                                 1,
		{Version: "v1", Resource: "serviceaccounts"}:                      1,
		{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}: 1,
	}
	harness.Eventually(t, 10*time.Second, func() error {
		for gvr, n := range want {
			if got := len(e.gc.Informer(gvr).ListNamespace(ns)); got != n {
				return fmt.Errorf("the cache holds %d %s in %s, want %d", got, gvr.Resource, ns, n)
			}
		}
		return nil
	})
}

// empty checks through the API that nothing is left in the namespace.
func (e *env) empty(t *testing.T, ns string) {
	t.Helper()
	cms, err := e.cs.CoreV1().ConfigMaps(ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := e.cs.CoreV1().Secrets(ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := e.cs.CoreV1().Pods(ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leases, err := e.cs.CoordinationV1().Leases(ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(cms.Items) + len(secrets.Items) + len(pods.Items) + len(leases.Items); n != 0 {
		t.Fatalf("%d objects are left in the deleted namespace %s", n, ns)
	}
}

func TestIntegrationNamespaceDeletion(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", "--disable-controller-manager", "--disable-scheduler", harness.NoServiceAccounts) // this test runs the controller under test itself
	e := start(t, s, false)
	kubectl := harness.Kubectl(t)

	t.Run("kubectl delete ns empties and removes it", func(t *testing.T) {
		e.populate(t, "doomed")
		s.MustRun(t, kubectl, "", "delete", "namespace", "doomed", "--timeout=60s")
		_, err := s.Run(t, kubectl, "", "get", "namespace", "doomed")
		if err == nil || !strings.Contains(err.(*harness.KubectlError).Stderr, "NotFound") {
			t.Fatalf("kubectl get ns doomed after its deletion: %v", err)
		}
		e.empty(t, "doomed")
	})

	t.Run("content with finalizers holds the namespace", func(t *testing.T) {
		const hold = "test.kubebus.io/hold"
		e.populate(t, "held", hold)
		s.MustRun(t, kubectl, "", "delete", "namespace", "held", "--wait=false")
		harness.Eventually(t, 20*time.Second, func() error {
			cms, err := e.cs.CoreV1().ConfigMaps("held").List(e.ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if len(cms.Items) != 1 || cms.Items[0].Name != "cm-0" || cms.Items[0].DeletionTimestamp == nil {
				return fmt.Errorf("want only cm-0 left, being deleted; have %d configmaps", len(cms.Items))
			}
			pods, err := e.cs.CoreV1().Pods("held").List(e.ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if len(pods.Items) > 0 {
				return fmt.Errorf("%d pods left", len(pods.Items))
			}
			return nil
		})
		ns, err := e.cs.CoreV1().Namespaces().Get(e.ctx, "held", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the namespace went while content remains: %v", err)
		}
		if ns.Status.Phase != corev1.NamespaceTerminating {
			t.Fatalf("phase %s, want Terminating", ns.Status.Phase)
		}
		release(t, e, "held")
		gone(t, e, "held")
		e.empty(t, "held")
	})

	t.Run("a namespace can be made again under the same name", func(t *testing.T) {
		e.populate(t, "doomed")
		s.MustRun(t, kubectl, "", "delete", "namespace", "doomed", "--timeout=60s")
		e.empty(t, "doomed")
	})
}

// release removes the finalizers of configmap cm-0.
func release(t *testing.T, e *env, ns string) {
	t.Helper()
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := e.cs.CoreV1().ConfigMaps(ns).Patch(e.ctx, "cm-0", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// gone waits until the namespace is gone.
func gone(t *testing.T, e *env, ns string) {
	t.Helper()
	harness.Eventually(t, 20*time.Second, func() error {
		_, err := e.cs.CoreV1().Namespaces().Get(e.ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("namespace %s is still there: %v", ns, err)
	})
}

// TestIntegrationNamespaceConditions: a namespace held by content with
// finalizers says so in its conditions, as upstream.
func TestIntegrationNamespaceConditions(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", "--disable-controller-manager", "--disable-scheduler", harness.NoServiceAccounts) // this test runs the controller under test itself
	e := start(t, s, true)
	const hold = "test.kubebus.io/hold"
	e.populate(t, "held", hold)
	s.MustRun(t, harness.Kubectl(t), "", "delete", "namespace", "held", "--wait=false")
	harness.Eventually(t, 20*time.Second, func() error {
		ns, err := e.cs.CoreV1().Namespaces().Get(e.ctx, "held", metav1.GetOptions{})
		if err != nil {
			return err
		}
		want := map[corev1.NamespaceConditionType]string{
			corev1.NamespaceContentRemaining:       "True/Some resources are remaining: configmaps has 1 resource instances",
			corev1.NamespaceFinalizersRemaining:    "True/Some content in the namespace has finalizers remaining: " + hold + " has 1 resource instances",
			corev1.NamespaceDeletionContentFailure: "False/All content successfully deleted, may be waiting on finalization",
		}
		for _, c := range ns.Status.Conditions {
			if w, ok := want[c.Type]; ok {
				if got := string(c.Status) + "/" + c.Message; got != w {
					return fmt.Errorf("condition %s = %q, want %q", c.Type, got, w)
				}
				delete(want, c.Type)
			}
		}
		if len(want) > 0 {
			return fmt.Errorf("conditions missing: %v", want)
		}
		return nil
	})
	release(t, e, "held")
	gone(t, e, "held")
	e.empty(t, "held")
}

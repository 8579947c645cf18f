package garbagecollector

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/kubebus/kubebus/apiserver/resource"
	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/test/harness"
)

// builtin lists every resource the server stores, as the collector takes them.
func builtin() []Resource {
	var out []Resource
	for _, r := range resource.Builtin() {
		if r.CreateOnly {
			continue
		}
		out = append(out, Resource{Group: r.GVK.Group, Version: r.GVK.Version, Resource: r.Plural, Kind: r.GVK.Kind, Namespaced: r.Namespaced})
	}
	return out
}

// testLogger writes the controllers' logs to the test log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// startGC runs the collector against s, as the controller-manager would:
// caches from the bus, a manager without leader election.
func startGC(t *testing.T, s *harness.Server) *GC {
	t.Helper()
	_, js := s.BusConnect(t, "system:kube-controller-manager")
	cs := s.Clientset(t)
	md, err := metadata.NewForConfig(s.RESTConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rec, stopRec := controllers.Recorder(ctx, cs, "garbage-collector")
	gc, err := New(Config{JetStream: js, Resources: builtin(), Client: md, Recorder: rec, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	mgr := &controllers.Manager{Client: cs, Lease: controllers.LeaseConfig{Disabled: true}, Logger: testLogger(t)}
	for _, c := range gc.Caches() {
		mgr.AddCache(c)
	}
	mgr.Add(gc)
	done := make(chan error, 1)
	go func() { done <- mgr.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		stopRec()
	})
	return gc
}

// fixture creates objects in one namespace and knows their UIDs.
type fixture struct {
	t   *testing.T
	cs  kubernetes.Interface
	gc  *GC
	ns  string
	ctx context.Context
}

func newFixture(t *testing.T, s *harness.Server, gc *GC, ns string) *fixture {
	f := &fixture{t: t, cs: s.Clientset(t), gc: gc, ns: ns, ctx: context.Background()}
	if _, err := f.cs.CoreV1().Namespaces().Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return f
}

// owned returns an ownerReference to a ConfigMap (or another kind).
func owned(kind, apiVersion, name string, uid types.UID, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, BlockOwnerDeletion: &block}
}

func (f *fixture) configMap(name string, finalizers []string, refs ...metav1.OwnerReference) types.UID {
	f.t.Helper()
	cm, err := f.cs.CoreV1().ConfigMaps(f.ns).Create(f.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name, OwnerReferences: refs, Finalizers: finalizers}}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return cm.UID
}

func (f *fixture) secret(name string, refs ...metav1.OwnerReference) types.UID {
	f.t.Helper()
	s, err := f.cs.CoreV1().Secrets(f.ns).Create(f.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: refs}}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return s.UID
}

func (f *fixture) pod(name string, refs ...metav1.OwnerReference) types.UID {
	f.t.Helper()
	p, err := f.cs.CoreV1().Pods(f.ns).Create(f.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: refs},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return p.UID
}

// cached waits until the collector's graph holds every UID: a test that
// deletes an owner before the collector saw its dependents tests the bus's
// latency, not the collector.
func (f *fixture) cached(uids ...types.UID) {
	f.t.Helper()
	harness.Eventually(f.t, 10*time.Second, func() error {
		for _, u := range uids {
			if _, _, ok := f.gc.Graph().Get(u); !ok {
				return fmt.Errorf("the collector has not seen %s", u)
			}
		}
		return nil
	})
}

var (
	cmGVR     = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	podGVR    = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// get reads an object's metadata through the API (nil when it is gone).
func (f *fixture) get(gvr schema.GroupVersionResource, name string) *metav1.ObjectMeta {
	f.t.Helper()
	var (
		m   metav1.Object
		err error
	)
	switch gvr {
	case cmGVR:
		m, err = f.cs.CoreV1().ConfigMaps(f.ns).Get(f.ctx, name, metav1.GetOptions{})
	case secretGVR:
		m, err = f.cs.CoreV1().Secrets(f.ns).Get(f.ctx, name, metav1.GetOptions{})
	case podGVR:
		m, err = f.cs.CoreV1().Pods(f.ns).Get(f.ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	om := metav1.ObjectMeta{Name: m.GetName(), UID: m.GetUID(), DeletionTimestamp: m.GetDeletionTimestamp(),
		Finalizers: m.GetFinalizers(), OwnerReferences: m.GetOwnerReferences()}
	return &om
}

// gone waits until the objects are gone.
func (f *fixture) gone(gvr schema.GroupVersionResource, names ...string) {
	f.t.Helper()
	harness.Eventually(f.t, 20*time.Second, func() error {
		for _, n := range names {
			if f.get(gvr, n) != nil {
				return fmt.Errorf("%s %s/%s still exists", gvr.Resource, f.ns, n)
			}
		}
		return nil
	})
}

func ownerUIDs(m *metav1.ObjectMeta) []types.UID {
	var out []types.UID
	for _, r := range m.OwnerReferences {
		out = append(out, r.UID)
	}
	return out
}

func TestIntegrationGarbageCollector(t *testing.T) {
	harness.SkipShort(t)
	s := harness.StartServer(t, "", "--disable-controller-manager", "--disable-scheduler", harness.NoServiceAccounts) // this test runs the controller under test itself
	gc := startGC(t, s)
	kubectl := harness.Kubectl(t)

	t.Run("background", func(t *testing.T) {
		f := newFixture(t, s, gc, "gc-background")
		owner := f.configMap("owner", nil)
		keeper := f.configMap("keeper", nil)
		ref := owned("ConfigMap", "v1", "owner", owner, true)
		child := f.configMap("child", nil, ref)
		grandchild := f.secret("grandchild", owned("ConfigMap", "v1", "child", child, true))
		uids := []types.UID{owner, keeper, child, grandchild,
			f.secret("secret", ref),
			f.pod("pod", owned("ConfigMap", "v1", "owner", owner, false)),
			f.configMap("shared", nil, ref, owned("ConfigMap", "v1", "keeper", keeper, true)),
		}
		f.cached(uids...)

		s.MustRun(t, kubectl, "", "delete", "configmap", "owner", "-n", f.ns, "--cascade=background")
		f.gone(cmGVR, "owner", "child")
		f.gone(secretGVR, "secret", "grandchild")
		f.gone(podGVR, "pod")
		harness.Eventually(t, 20*time.Second, func() error {
			m := f.get(cmGVR, "shared")
			if m == nil {
				return fmt.Errorf("shared was deleted though its keeper remains")
			}
			if got := ownerUIDs(m); !slices.Equal(got, []types.UID{keeper}) {
				return fmt.Errorf("shared is owned by %v, want only the keeper %s", got, keeper)
			}
			return nil
		})
		if f.get(cmGVR, "keeper") == nil {
			t.Fatal("keeper was deleted")
		}
	})

	t.Run("dangling and cluster-scoped owners", func(t *testing.T) {
		f := newFixture(t, s, gc, "gc-dangling")
		pc, err := f.cs.SchedulingV1().PriorityClasses().Create(f.ctx, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: "gc-owner"}, Value: 1000}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f.configMap("dangling", nil, owned("ConfigMap", "v1", "never-was", "00000000-0000-0000-0000-000000000001", false))
		byPC := f.configMap("by-priorityclass", nil, owned("PriorityClass", "scheduling.k8s.io/v1", "gc-owner", pc.UID, false))
		unknown := f.configMap("unknown-kind", nil, owned("Widget", "example.com/v1", "w", "00000000-0000-0000-0000-000000000002", false))
		f.cached(pc.UID, byPC, unknown)
		f.gone(cmGVR, "dangling")

		s.MustRun(t, kubectl, "", "delete", "priorityclass", "gc-owner")
		f.gone(cmGVR, "by-priorityclass")
		if f.get(cmGVR, "unknown-kind") == nil {
			t.Fatal("an object owned by a kind the collector does not watch was deleted")
		}
	})

	t.Run("foreground", func(t *testing.T) {
		f := newFixture(t, s, gc, "gc-foreground")
		const hold = "test.kubebus.io/hold"
		owner := f.configMap("owner", nil)
		ref := owned("ConfigMap", "v1", "owner", owner, true)
		blocker := f.configMap("blocker", []string{hold}, ref)
		child := f.configMap("child", nil, ref)
		f.cached(owner, blocker, child,
			f.secret("grandchild", owned("ConfigMap", "v1", "child", child, true)),
			f.secret("secret", ref),
			f.pod("pod", owned("ConfigMap", "v1", "owner", owner, false)))

		s.MustRun(t, kubectl, "", "delete", "configmap", "owner", "-n", f.ns, "--cascade=foreground", "--wait=false")
		f.gone(secretGVR, "secret", "grandchild")
		f.gone(podGVR, "pod")
		f.gone(cmGVR, "child")
		harness.Eventually(t, 20*time.Second, func() error {
			if m := f.get(cmGVR, "blocker"); m == nil || m.DeletionTimestamp == nil {
				return fmt.Errorf("the blocker is not being deleted: %+v", m)
			}
			return nil
		})
		m := f.get(cmGVR, "owner")
		if m == nil {
			t.Fatal("the owner went while a blocking dependent remains")
		}
		if m.DeletionTimestamp == nil || !slices.Contains(m.Finalizers, FinalizerForeground) {
			t.Fatalf("the owner is not waiting for its dependents: deletionTimestamp %v, finalizers %v", m.DeletionTimestamp, m.Finalizers)
		}

		patch := fmt.Appendf(nil, `{"metadata":{"finalizers":null}}`)
		if _, err := f.cs.CoreV1().ConfigMaps(f.ns).Patch(f.ctx, "blocker", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		f.gone(cmGVR, "blocker", "owner")
	})

	t.Run("foreground with kubectl waiting", func(t *testing.T) {
		f := newFixture(t, s, gc, "gc-foreground-wait")
		owner := f.configMap("owner", nil)
		ref := owned("ConfigMap", "v1", "owner", owner, true)
		f.cached(owner, f.configMap("a", nil, ref), f.secret("b", ref), f.pod("c", ref))
		s.MustRun(t, kubectl, "", "delete", "configmap", "owner", "-n", f.ns, "--cascade=foreground", "--timeout=60s")
		// The owner went last: every blocking dependent was gone before.
		for _, o := range []struct {
			gvr  schema.GroupVersionResource
			name string
		}{{cmGVR, "owner"}, {cmGVR, "a"}, {secretGVR, "b"}, {podGVR, "c"}} {
			if f.get(o.gvr, o.name) != nil {
				t.Errorf("%s %s exists after the foreground deletion of its owner returned", o.gvr.Resource, o.name)
			}
		}
	})

	t.Run("orphan", func(t *testing.T) {
		f := newFixture(t, s, gc, "gc-orphan")
		owner := f.configMap("owner", nil)
		keeper := f.configMap("keeper", nil)
		ref := owned("ConfigMap", "v1", "owner", owner, true)
		f.cached(owner, keeper,
			f.configMap("child", nil, ref),
			f.secret("secret", ref),
			f.pod("pod", owned("ConfigMap", "v1", "owner", owner, false)),
			f.configMap("shared", nil, owned("ConfigMap", "v1", "keeper", keeper, true), ref))

		s.MustRun(t, kubectl, "", "delete", "configmap", "owner", "-n", f.ns, "--cascade=orphan", "--timeout=60s")
		if f.get(cmGVR, "owner") != nil {
			t.Fatal("the owner still exists after kubectl delete returned")
		}
		// The finalizer goes only after every dependent was released, so
		// nothing may be deleted later on: look now, and once more after the
		// collector has had time to act.
		for _, o := range []struct {
			gvr    schema.GroupVersionResource
			name   string
			owners []types.UID
		}{{cmGVR, "child", nil}, {secretGVR, "secret", nil}, {podGVR, "pod", nil}, {cmGVR, "shared", []types.UID{keeper}}} {
			m := f.get(o.gvr, o.name)
			if m == nil {
				t.Errorf("%s %s was deleted; orphaning keeps dependents", o.gvr.Resource, o.name)
				continue
			}
			if got := ownerUIDs(m); !slices.Equal(got, o.owners) {
				t.Errorf("%s %s is owned by %v, want %v", o.gvr.Resource, o.name, got, o.owners)
			}
		}
		f.gcSaw(owner)
		for _, n := range []string{"child", "shared"} {
			if f.get(cmGVR, n) == nil {
				t.Errorf("configmap %s was deleted after being orphaned", n)
			}
		}
	})
}

// gcSaw waits until the collector has seen an object's deletion and has
// drained its queue (best effort: a key being worked on is not counted).
func (f *fixture) gcSaw(deleted types.UID) {
	f.t.Helper()
	harness.Eventually(f.t, 10*time.Second, func() error {
		if _, _, ok := f.gc.Graph().Get(deleted); ok {
			return fmt.Errorf("the collector has not seen %s go", deleted)
		}
		if n := f.gc.ctrl.Len(); n > 0 {
			return fmt.Errorf("%d keys queued", n)
		}
		return nil
	})
}

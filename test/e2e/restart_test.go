package e2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/test/harness"
)

const restartNS = "restart"

// restartKind creates and reads back one object of a kind.
type restartKind struct {
	kind   string
	create func(context.Context, kubernetes.Interface) (metav1.Object, error)
	get    func(context.Context, kubernetes.Interface) (metav1.Object, error)
}

// restartKinds are created in order; the namespace comes first.
var restartKinds = []restartKind{
	{"Namespace",
		func(ctx context.Context, cs kubernetes.Interface) (metav1.Object, error) {
			return cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: restartNS}}, metav1.CreateOptions{})
		},
		func(ctx context.Context, cs kubernetes.Interface) (metav1.Object, error) {
			return cs.CoreV1().Namespaces().Get(ctx, restartNS, metav1.GetOptions{})
		}},
	{"ConfigMap",
		func(ctx context.Context, cs kubernetes.Interface) (metav1.Object, error) {
			return cs.CoreV1().ConfigMaps(restartNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "restart-cm"},
				Data: map[string]string{"k": "v1"}}, metav1.CreateOptions{})
		},
		func(ctx context.Context, cs kubernetes.Interface) (metav1.Object, error) {
			return cs.CoreV1().ConfigMaps(restartNS).Get(ctx, "restart-cm", metav1.GetOptions{})
		}},
	{"Secret",
		func(ctx context.Context, cs kubernetes.Interface) (metav1.Object, error) {
			return cs.CoreV1().Secrets(restartNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "restart-secret"},
				Data: map[string][]byte{"password": []byte("s3cret")}}, metav1.CreateOptions{})
		},
		func(ctx context.Context, cs kubernetes.Interface) (metav1.Object, error) {
			return cs.CoreV1().Secrets(restartNS).Get(ctx, "restart-secret", metav1.GetOptions{})
		}},
	{"ServiceAccount",
		func(ctx context.Context, cs kubernetes.Interface) (metav1.Object, error) {
			return cs.CoreV1().ServiceAccounts(restartNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "restart-sa"}}, metav1.CreateOptions{})
		},
		func(ctx context.Context, cs kubernetes.Interface) (metav1.Object, error) {
			return cs.CoreV1().ServiceAccounts(restartNS).Get(ctx, "restart-sa", metav1.GetOptions{})
		}},
	{"Service",
		func(ctx context.Context, cs kubernetes.Interface) (metav1.Object, error) {
			return cs.CoreV1().Services(restartNS).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "restart-svc"},
				Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "restart"},
					Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
		},
		func(ctx context.Context, cs kubernetes.Interface) (metav1.Object, error) {
			return cs.CoreV1().Services(restartNS).Get(ctx, "restart-svc", metav1.GetOptions{})
		}},
	{"Deployment",
		func(ctx context.Context, cs kubernetes.Interface) (metav1.Object, error) {
			return cs.AppsV1().Deployments(restartNS).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "restart-deploy"},
				Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "restart"}},
					Template: podTemplate("restart")}}, metav1.CreateOptions{})
		},
		func(ctx context.Context, cs kubernetes.Interface) (metav1.Object, error) {
			return cs.AppsV1().Deployments(restartNS).Get(ctx, "restart-deploy", metav1.GetOptions{})
		}},
	{"ReplicaSet",
		func(ctx context.Context, cs kubernetes.Interface) (metav1.Object, error) {
			return cs.AppsV1().ReplicaSets(restartNS).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "restart-rs"},
				Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "restart-rs"}},
					Template: podTemplate("restart-rs")}}, metav1.CreateOptions{})
		},
		func(ctx context.Context, cs kubernetes.Interface) (metav1.Object, error) {
			return cs.AppsV1().ReplicaSets(restartNS).Get(ctx, "restart-rs", metav1.GetOptions{})
		}},
	{"Lease",
		func(ctx context.Context, cs kubernetes.Interface) (metav1.Object, error) {
			holder := "restart-holder"
			return cs.CoordinationV1().Leases(restartNS).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "restart-lease"},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{})
		},
		func(ctx context.Context, cs kubernetes.Interface) (metav1.Object, error) {
			return cs.CoordinationV1().Leases(restartNS).Get(ctx, "restart-lease", metav1.GetOptions{})
		}},
	{"PriorityClass",
		func(ctx context.Context, cs kubernetes.Interface) (metav1.Object, error) {
			return cs.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "restart-priority"},
				Value: 1000}, metav1.CreateOptions{})
		},
		func(ctx context.Context, cs kubernetes.Interface) (metav1.Object, error) {
			return cs.SchedulingV1().PriorityClasses().Get(ctx, "restart-priority", metav1.GetOptions{})
		}},
}

func podTemplate(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
}

// TestIntegrationRestart restarts a server on the same data directory, after
// a clean stop and after a crash, and checks that the stored objects come
// back unchanged and that revisions and watches continue where they were.
func TestIntegrationRestart(t *testing.T) {
	harness.SkipShort(t)
	for _, m := range []struct {
		name    string
		restart func(*testing.T, *harness.Server)
	}{
		{"graceful", func(t *testing.T, s *harness.Server) { s.Restart(t) }},
		{"crash", func(t *testing.T, s *harness.Server) { s.Kill(t); s.Restart(t) }},
	} {
		t.Run(m.name, func(t *testing.T) { testRestart(t, m.restart) })
	}
}

func testRestart(t *testing.T, restart func(*testing.T, *harness.Server)) {
	ctx := t.Context()
	s := harness.StartServer(t, "", apiOnly...)
	cs := s.Clientset(t)

	before := map[string]metav1.Object{}
	var maxRV int64
	for _, k := range restartKinds {
		obj, err := k.create(ctx, cs)
		if err != nil {
			t.Fatalf("creating %s: %v", k.kind, err)
		}
		before[k.kind] = obj
		maxRV = max(maxRV, revisionOf(t, obj.GetResourceVersion()))
	}
	// An update and a delete as well, so the history is more than creates.
	cm, err := cs.CoreV1().ConfigMaps(restartNS).Get(ctx, "restart-cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "v2"
	if cm, err = cs.CoreV1().ConfigMaps(restartNS).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating configmap before the restart: %v", err)
	}
	before["ConfigMap"] = cm
	maxRV = max(maxRV, revisionOf(t, cm.ResourceVersion))
	if _, err := cs.CoreV1().ConfigMaps(restartNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "restart-doomed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps(restartNS).Delete(ctx, "restart-doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := cs.CoreV1().ConfigMaps(restartNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listRV := list.ResourceVersion
	maxRV = max(maxRV, revisionOf(t, listRV))

	restart(t, s)
	cs = s.Clientset(t) // the server listens on a new port

	t.Run("objects keep uid and resourceVersion", func(t *testing.T) {
		for _, k := range restartKinds {
			t.Run(k.kind, func(t *testing.T) {
				got, err := k.get(ctx, cs)
				if err != nil {
					t.Fatalf("getting %s after the restart: %v", k.kind, err)
				}
				want := before[k.kind]
				if got.GetUID() != want.GetUID() || got.GetResourceVersion() != want.GetResourceVersion() {
					t.Errorf("%s %s after the restart: uid %s resourceVersion %s, want uid %s resourceVersion %s",
						k.kind, want.GetName(), got.GetUID(), got.GetResourceVersion(), want.GetUID(), want.GetResourceVersion())
				}
			})
		}
		t.Run("deleted ConfigMap", func(t *testing.T) {
			_, err := cs.CoreV1().ConfigMaps(restartNS).Get(ctx, "restart-doomed", metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				t.Errorf("deleted configmap after the restart: err = %v, want NotFound", err)
			}
		})
	})

	// Writes after the restart.
	cm, err = cs.CoreV1().ConfigMaps(restartNS).Get(ctx, "restart-cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "v3"
	updated, err := cs.CoreV1().ConfigMaps(restartNS).Update(ctx, cm, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating configmap after the restart: %v", err)
	}
	created, err := cs.CoreV1().ConfigMaps(restartNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "restart-after"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating configmap after the restart: %v", err)
	}

	t.Run("revisions continue", func(t *testing.T) {
		for _, w := range []struct {
			what  string
			rv    string
			floor int64
		}{
			{"update after the restart", updated.ResourceVersion, maxRV},
			{"create after the restart", created.ResourceVersion, revisionOf(t, updated.ResourceVersion)},
		} {
			if got := revisionOf(t, w.rv); got <= w.floor {
				t.Errorf("%s: resourceVersion %d, want > %d (revisions reset by the restart)", w.what, got, w.floor)
			}
		}
		l, err := cs.CoreV1().ConfigMaps(restartNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, floor := revisionOf(t, l.ResourceVersion), revisionOf(t, created.ResourceVersion); got < floor {
			t.Errorf("list after the restart: resourceVersion %d, want >= %d", got, floor)
		}
	})

	t.Run("watch from the old list resourceVersion", func(t *testing.T) {
		w, err := cs.CoreV1().ConfigMaps(restartNS).Watch(ctx, metav1.ListOptions{ResourceVersion: listRV})
		if err != nil {
			t.Fatalf("watch configmaps from resourceVersion %s after the restart: %v", listRV, err)
		}
		defer w.Stop()
		// The history after listRV replays, in order, and nothing before it.
		expectWatchEvent(t, w, watch.Modified, "restart-cm", updated.ResourceVersion)
		expectWatchEvent(t, w, watch.Added, "restart-after", created.ResourceVersion)
		// A write while the watch is open arrives too.
		if err := cs.CoreV1().ConfigMaps(restartNS).Delete(ctx, "restart-after", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		ev := expectWatchEvent(t, w, watch.Deleted, "restart-after", "")
		if revisionOf(t, ev.GetResourceVersion()) <= revisionOf(t, created.ResourceVersion) {
			t.Errorf("delete event resourceVersion %s, want > %s", ev.GetResourceVersion(), created.ResourceVersion)
		}
	})
}

// expectWatchEvent reads the next watch event and checks its type, object name and
// (when rv is not empty) resourceVersion.
func expectWatchEvent(t *testing.T, w watch.Interface, typ watch.EventType, name, rv string) metav1.Object {
	t.Helper()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	var ev watch.Event
	select {
	case e, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch closed before the %s event for %s", typ, name)
		}
		ev = e
	case <-timer.C:
		t.Fatalf("no %s event for %s after 30s", typ, name)
	}
	if ev.Type == watch.Error {
		t.Fatalf("watch error instead of %s %s: %v", typ, name, apierrors.FromObject(ev.Object))
	}
	obj, ok := ev.Object.(metav1.Object)
	if !ok {
		t.Fatalf("watch event %s carries %T", ev.Type, ev.Object)
	}
	if ev.Type != typ || obj.GetName() != name || (rv != "" && obj.GetResourceVersion() != rv) {
		t.Fatalf("watch event %s %s resourceVersion %s, want %s %s resourceVersion %s",
			ev.Type, obj.GetName(), obj.GetResourceVersion(), typ, name, rv)
	}
	return obj
}

// revisionOf reads a resourceVersion as the etcd revision kubebus uses.
func revisionOf(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q is not an integer revision: %v", rv, err)
	}
	return n
}

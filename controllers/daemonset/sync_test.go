package daemonset

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/history"
)

// env is a reconciler over in-memory caches and fake writers; pods the
// reconciler creates reach the cache only when the test says so.
type env struct {
	t     *testing.T
	r     *reconciler
	pods  listInformer[*corev1.Pod]
	nodes listInformer[*corev1.Node]
	dsets listInformer[*appsv1.DaemonSet]
	revs  listInformer[*appsv1.ControllerRevision]
	wp    *fakePods
	wd    *fakeDSets
	wr    *fakeRevs
	rec   *fakeRecorder
	seen  int // created pods already put in the cache
}

func newEnv(t *testing.T, ds *appsv1.DaemonSet, ns []*corev1.Node) *env {
	e := &env{t: t, pods: newListInformer[*corev1.Pod](), nodes: newListInformer(ns...), dsets: newListInformer(ds),
		revs: newListInformer[*appsv1.ControllerRevision](), wp: &fakePods{}, wd: &fakeDSets{current: map[string]*appsv1.DaemonSet{"default/agent": ds}}, rec: &fakeRecorder{}}
	e.wr = newFakeRevs(e.revs)
	cfg := Config{Client: nil, Pods: e.pods, Nodes: e.nodes, DaemonSets: e.dsets, Revisions: e.revs, Recorder: e.rec, Logger: slog.New(slog.DiscardHandler)}
	cfg.Now = func() time.Time { return t0 }
	cfg.Workers, cfg.BurstReplicas = 1, DefaultBurstReplicas
	e.r = newReconciler(cfg, writers{pods: e.wp, dsets: e.wd, revs: e.wr})
	e.r.register(func(controllers.Request) {})
	return e
}

func (e *env) sync() {
	e.t.Helper()
	if _, err := e.r.Reconcile(context.Background(), controllers.Request{Namespace: "default", Name: "agent"}); err != nil {
		e.t.Fatal(err)
	}
}

// observe puts the pods created since the last call in the cache, bound
// to their node and ready.
func (e *env) observe() {
	for _, p := range e.wp.created[e.seen:] {
		p = p.DeepCopy()
		p.Spec.NodeName = targetNode(p)
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}}
		e.pods.Set(p)
	}
	e.seen = len(e.wp.created)
}

// finishDeletions removes the deleted pods from the cache (after playing
// their graceful deletion).
func (e *env) finishDeletions() {
	for _, name := range e.wp.deleted {
		if p, ok := e.pods.Get("default", name); ok {
			cp := p.DeepCopy()
			cp.DeletionTimestamp = new(metav1.NewTime(t0))
			e.pods.Set(cp)
			e.pods.Remove(cp)
		}
	}
	e.wp.deleted = nil
}

func (e *env) update(change func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	ds, _ := e.dsets.Get("default", "agent")
	ds = ds.DeepCopy()
	change(ds)
	ds.Generation++
	e.dsets.Set(ds)
	return ds
}

func (e *env) revisions() map[int64]string {
	out := map[int64]string{}
	for _, r := range e.revs.List() {
		out[r.Revision] = r.Labels[history.ControllerRevisionHashLabel]
	}
	return out
}

func TestReconcileRollout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testDS(), nodes(3))

	// A pod per node, from revision 1.
	e.sync()
	revs := e.revisions()
	if len(revs) != 1 || revs[1] == "" {
		t.Fatalf("revisions %v, want revision 1", revs)
	}
	h1 := revs[1]
	if len(e.wp.created) != 3 || e.rec.count("Normal SuccessfulCreate") != 3 {
		t.Fatalf("created %d pods, %d events", len(e.wp.created), e.rec.count("Normal SuccessfulCreate"))
	}
	var targets []string
	for _, p := range e.wp.created {
		targets = append(targets, targetNode(p))
		if hashOf(p) != h1 || p.Spec.NodeName != "" {
			t.Errorf("pod %s: hash %q nodeName %q", p.Name, hashOf(p), p.Spec.NodeName)
		}
	}
	slices.Sort(targets)
	if !slices.Equal(targets, []string{"n0", "n1", "n2"}) {
		t.Errorf("pods for %v", targets)
	}
	if st := e.wd.last(); st.DesiredNumberScheduled != 3 || st.CurrentNumberScheduled != 0 || st.ObservedGeneration != 2 {
		t.Errorf("status %+v", st)
	}
	// Until the cache shows them, nothing more is created.
	e.sync()
	if len(e.wp.created) != 3 {
		t.Fatalf("created %d pods before the first were observed", len(e.wp.created))
	}
	e.observe()
	e.sync()
	if st := e.wd.last(); st.CurrentNumberScheduled != 3 || st.NumberAvailable != 3 || st.UpdatedNumberScheduled != 3 || st.NumberUnavailable != 0 {
		t.Errorf("status %+v", st)
	}

	// A new image: revision 2, one pod replaced at a time.
	e.update(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = "agent:2" })
	e.sync()
	revs = e.revisions()
	h2 := revs[2]
	if len(revs) != 2 || h2 == "" || h2 == h1 {
		t.Fatalf("revisions %v", revs)
	}
	if len(e.wp.deleted) != 1 {
		t.Fatalf("deleted %v, want one pod", e.wp.deleted)
	}
	e.sync() // the deletion is not observed yet
	if len(e.wp.deleted) != 1 {
		t.Fatalf("deleted %v before the first deletion was observed", e.wp.deleted)
	}
	for range 3 {
		e.finishDeletions()
		e.sync() // the node's new pod
		e.observe()
		e.sync() // the next old pod goes
	}
	if st := e.wd.last(); st.UpdatedNumberScheduled != 3 || st.NumberAvailable != 3 {
		t.Errorf("after the rollout: status %+v", st)
	}
	if n := len(e.pods.List()); n != 3 {
		t.Errorf("%d pods after the rollout", n)
	}
	for _, p := range e.pods.List() {
		if hashOf(p) != h2 {
			t.Errorf("pod %s of %s after the rollout", p.Name, hashOf(p))
		}
	}

	// Back to the first image: revision 1 is renumbered 3, none created.
	e.update(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = "agent:1" })
	e.sync()
	revs = e.revisions()
	if len(revs) != 2 || revs[3] != h1 || revs[2] != h2 {
		t.Errorf("after the rollback: revisions %v, want 2:%s 3:%s", revs, h2, h1)
	}

	// History limit 0: revision 2 goes once no pod runs it.
	e.update(func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = new(int32(0)) })
	e.sync()
	if revs := e.revisions(); len(revs) != 2 {
		t.Errorf("revisions %v: revision 2 went while pods run it", revs)
	}
	for range 8 {
		e.finishDeletions()
		e.sync()
		e.observe()
	}
	if revs := e.revisions(); len(revs) != 1 || revs[3] != h1 {
		t.Errorf("revisions %v, want only 3", revs)
	}
}

func TestReconcileNodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testDS(), nodes(2))
	e.sync()
	e.observe()
	e.sync()
	// A new node gets its pod.
	e.nodes.Set(testNode("n2"))
	e.sync()
	if len(e.wp.created) != 3 || targetNode(e.wp.created[2]) != "n2" {
		t.Fatalf("created %d pods", len(e.wp.created))
	}
	e.observe()
	// A removed node's pod goes; a node tainted NoExecute loses its pod.
	n0, _ := e.nodes.Get("", "n0")
	e.nodes.Remove(n0)
	e.nodes.Set(testNode("n1", taint("dedicated", corev1.TaintEffectNoExecute)))
	e.sync()
	slices.Sort(e.wp.deleted)
	var want []string
	for _, p := range e.pods.List() {
		if p.Spec.NodeName == "n0" || p.Spec.NodeName == "n1" {
			want = append(want, p.Name)
		}
	}
	slices.Sort(want)
	if !slices.Equal(e.wp.deleted, want) || e.rec.count("Normal SuccessfulDelete") != 2 {
		t.Errorf("deleted %v, want %v", e.wp.deleted, want)
	}
	e.finishDeletions()
	e.sync()
	if st := e.wd.last(); st.DesiredNumberScheduled != 1 || st.CurrentNumberScheduled != 1 || st.NumberMisscheduled != 0 {
		t.Errorf("status %+v", st)
	}
}

func TestReconcileAdoptsAndReleases(t *testing.T) {
	t.Parallel()
	ds := testDS()
	e := newEnv(t, ds, nodes(2))
	orphan := testPod(ds, "n0", "x")
	orphan.OwnerReferences = nil
	stray := testPod(ds, "n1", "x")
	stray.Labels = map[string]string{"app": "other"}
	e.pods.Put(orphan)
	e.pods.Put(stray)
	e.sync()
	if len(e.wp.patches) != 2 || e.wp.patches[orphan.Name] == "" || e.wp.patches[stray.Name] == "" {
		t.Errorf("patches %v", e.wp.patches)
	}
	// The adopted pod holds n0; n1's pod was released, so n1 gets one.
	if len(e.wp.created) != 1 || targetNode(e.wp.created[0]) != "n1" {
		t.Errorf("created %d pods", len(e.wp.created))
	}
}

func TestReconcileEmptySelector(t *testing.T) {
	t.Parallel()
	e := newEnv(t, testDS(func(ds *appsv1.DaemonSet) { ds.Spec.Selector = &metav1.LabelSelector{} }), nodes(1))
	e.sync()
	if e.rec.count("Warning "+ReasonSelectingAll) != 1 || len(e.wp.created) != 0 {
		t.Errorf("events %v, created %d", e.rec.events, len(e.wp.created))
	}
}

func TestReconcileFailedPodBackoff(t *testing.T) {
	t.Parallel()
	ds := testDS()
	e := newEnv(t, ds, nodes(1))
	now := t0
	e.r.now = func() time.Time { return now }
	fail := func() {
		for _, p := range e.pods.List() {
			cp := p.DeepCopy()
			cp.Status.Phase = corev1.PodFailed
			e.pods.Set(cp)
		}
	}
	e.sync()
	e.observe()
	fail()
	e.sync()
	if len(e.wp.deleted) != 1 || e.rec.count("Warning "+ReasonFailedDaemonPod) != 1 {
		t.Fatalf("deleted %v, events %v", e.wp.deleted, e.rec.events)
	}
	e.finishDeletions()
	e.sync()
	e.observe()
	fail()
	// The second failure within the backoff waits.
	now = now.Add(500 * time.Millisecond)
	res, err := e.r.Reconcile(context.Background(), controllers.Request{Namespace: "default", Name: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.wp.deleted) != 0 || res.RequeueAfter <= 0 || res.RequeueAfter > 2*time.Second {
		t.Fatalf("deleted %v within the backoff; requeue after %v", e.wp.deleted, res.RequeueAfter)
	}
	now = now.Add(3 * time.Second)
	e.sync()
	if len(e.wp.deleted) != 1 {
		t.Fatalf("deleted %v after the backoff", e.wp.deleted)
	}
}

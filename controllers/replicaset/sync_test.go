package replicaset

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/controllers"
)

func mkRS(name string, replicas int32, sel map[string]string) *appsv1.ReplicaSet {
	tl := map[string]string{}
	for k, v := range sel {
		tl[k] = v
	}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"), Generation: 1, ResourceVersion: "1"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: tl},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:1"}}},
			},
		},
	}
}

// env is a reconciler over fake caches and writers.
type env struct {
	pods  *fakeInformer[*corev1.Pod]
	rsets *fakeInformer[*appsv1.ReplicaSet]
	podW  *fakePods
	rsW   *fakeRSets
	rec   *fakeRecorder
	r     *reconciler
	clock time.Time

	mu     sync.Mutex
	queued []string
}

func newEnv(t *testing.T, rsets []*appsv1.ReplicaSet, pods ...*corev1.Pod) *env {
	t.Helper()
	e := &env{
		pods: newFakeInformer(pods...), rsets: newFakeInformer(rsets...),
		podW: &fakePods{}, rsW: &fakeRSets{current: map[string]*appsv1.ReplicaSet{}}, rec: &fakeRecorder{}, clock: t0,
	}
	for _, rs := range rsets {
		e.rsW.current[keyOfObj(rs)] = rs
	}
	cfg := Config{Pods: e.pods, ReplicaSets: e.rsets, Recorder: e.rec, Logger: slog.New(slog.DiscardHandler), BurstReplicas: 500,
		Now: func() time.Time { return e.clock }}
	e.r = newReconciler(cfg, writers{pods: e.podW, rsets: e.rsW})
	e.r.register(func(req controllers.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.queued = append(e.queued, req.String())
	})
	return e
}

func (e *env) sync(t *testing.T, rs *appsv1.ReplicaSet) (controllers.Result, error) {
	t.Helper()
	return e.r.Reconcile(context.Background(), controllers.KeyOf(rs))
}

func (e *env) mustSync(t *testing.T, rs *appsv1.ReplicaSet) {
	t.Helper()
	if _, err := e.sync(t, rs); err != nil {
		t.Fatalf("sync: %v", err)
	}
}

// observe plays the creation events of the first n pods created so far
// that the cache has not seen.
func (e *env) observe(n int) {
	for _, p := range e.podW.created {
		if n == 0 {
			return
		}
		if _, ok := e.pods.Get(p.Namespace, p.Name); !ok {
			e.pods.Set(p)
			n--
		}
	}
}

func (e *env) takeQueued() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := e.queued
	e.queued = nil
	slices.Sort(q)
	return slices.Compact(q)
}

func TestSyncCreatesOnceUntilObserved(t *testing.T) {
	t.Parallel()
	rs := mkRS("web", 10, map[string]string{"app": "web"})
	e := newEnv(t, []*appsv1.ReplicaSet{rs})
	e.mustSync(t, rs)
	if len(e.podW.created) != 10 || e.rec.count("Normal SuccessfulCreate") != 10 {
		t.Fatalf("created %d pods, %d events; want 10", len(e.podW.created), e.rec.count("Normal SuccessfulCreate"))
	}
	for _, p := range e.podW.created {
		if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != rs.UID || p.GenerateName != "web-" {
			t.Fatalf("pod %s: owner %+v generateName %q", p.Name, p.OwnerReferences, p.GenerateName)
		}
	}
	// The cache has shown none, then some: no sync may create more.
	e.mustSync(t, rs)
	e.observe(6)
	e.mustSync(t, rs)
	if len(e.podW.created) != 10 {
		t.Fatalf("created %d pods before the cache caught up, want 10", len(e.podW.created))
	}
	e.observe(4)
	e.mustSync(t, rs)
	if len(e.podW.created) != 10 {
		t.Fatalf("created %d pods, want 10", len(e.podW.created))
	}
	if st := e.rsW.lastStatus(); st.Replicas != 10 || st.ObservedGeneration != 1 {
		t.Errorf("status %+v", st)
	}
	if q := e.takeQueued(); !slices.Equal(q, []string{"ns/web"}) {
		t.Errorf("queued %v", q)
	}
}

func TestSyncSlowStartStopsAfterAFailedBatch(t *testing.T) {
	t.Parallel()
	rs := mkRS("web", 10, map[string]string{"app": "web"})
	e := newEnv(t, []*appsv1.ReplicaSet{rs})
	quota := errors.New("exceeded quota")
	e.podW.failCreate = func(n int) error {
		if n >= 3 {
			return quota
		}
		return nil
	}
	if _, err := e.sync(t, rs); !errors.Is(err, quota) {
		t.Fatalf("sync error %v, want the quota error", err)
	}
	// Batches of 1 and 2: the second has a failure, so no third batch.
	if e.podW.n != 3 || len(e.podW.created) != 2 {
		t.Fatalf("%d attempts, %d created; want 3 and 2", e.podW.n, len(e.podW.created))
	}
	if e.rec.count("Warning FailedCreate") != 1 {
		t.Errorf("events %v", e.rec.events)
	}
	if st := e.rsW.lastStatus(); failureCondition(st.Conditions) == nil {
		t.Errorf("no ReplicaFailure condition in %+v", st)
	}
	// The failed creation is not waited for: once the two pods show, the
	// next sync tries again.
	e.observe(2)
	e.podW.failCreate = nil
	e.mustSync(t, rs)
	if len(e.podW.created) != 10 {
		t.Fatalf("created %d, want 10", len(e.podW.created))
	}
}

func TestSyncScaleDownDeletesLeastValuable(t *testing.T) {
	t.Parallel()
	rs := mkRS("web", 2, map[string]string{"app": "web"})
	pods := []*corev1.Pod{
		mkPod("ready1", labelled("app", "web"), ownedBy(rs), onNode("n1"), readyAt(0)),
		mkPod("ready2", labelled("app", "web"), ownedBy(rs), onNode("n2"), readyAt(0)),
		mkPod("pending", labelled("app", "web"), ownedBy(rs)),
		mkPod("running", labelled("app", "web"), ownedBy(rs), onNode("n3"), phase(corev1.PodRunning)),
		mkPod("done", labelled("app", "web"), ownedBy(rs), onNode("n3"), phase(corev1.PodSucceeded)),
	}
	for i, p := range pods {
		p.UID = types.UID(p.Name)
		p.ResourceVersion = string(rune('1' + i))
	}
	e := newEnv(t, []*appsv1.ReplicaSet{rs}, pods...)
	e.mustSync(t, rs)
	if got := slices.Sorted(slices.Values(e.podW.deleted)); !slices.Equal(got, []string{"pending", "running"}) {
		t.Fatalf("deleted %v, want pending and running", got)
	}
	if st := e.rsW.lastStatus(); st.Replicas != 2 || st.ReadyReplicas != 2 {
		t.Errorf("status after deleting %+v", st)
	}
	// Until the deletions show in the cache nothing more happens.
	e.pods.Remove(pods[2])
	e.mustSync(t, rs)
	if len(e.podW.deleted) != 2 || len(e.podW.created) != 0 {
		t.Fatalf("deleted %v created %d", e.podW.deleted, len(e.podW.created))
	}
	e.pods.Remove(pods[3])
	e.mustSync(t, rs)
	if len(e.podW.deleted) != 2 || len(e.podW.created) != 0 {
		t.Fatalf("deleted %v created %d", e.podW.deleted, len(e.podW.created))
	}
}

func TestSyncAdoptsAndReleases(t *testing.T) {
	t.Parallel()
	rs := mkRS("web", 2, map[string]string{"app": "web"})
	kept := mkPod("kept", labelled("app", "web"), ownedBy(rs))
	orphan := mkPod("orphan", labelled("app", "web"))
	strayed := mkPod("strayed", labelled("app", "db"), ownedBy(rs))
	for _, p := range []*corev1.Pod{kept, orphan, strayed} {
		p.UID = types.UID(p.Name)
	}
	e := newEnv(t, []*appsv1.ReplicaSet{rs}, kept, orphan, strayed)
	e.mustSync(t, rs)
	if _, ok := e.podW.patches["orphan"]; !ok {
		t.Error("orphan not adopted")
	}
	if _, ok := e.podW.patches["strayed"]; !ok {
		t.Error("strayed pod not released")
	}
	if len(e.podW.created) != 0 {
		t.Errorf("created %d pods although the adopted orphan makes two", len(e.podW.created))
	}
	if st := e.rsW.lastStatus(); st.Replicas != 2 {
		t.Errorf("status %+v", st)
	}
}

func TestSyncDoesNotAdoptForAReplicaSetBeingDeleted(t *testing.T) {
	t.Parallel()
	rs := mkRS("web", 2, map[string]string{"app": "web"})
	orphan := mkPod("orphan", labelled("app", "web"))
	e := newEnv(t, []*appsv1.ReplicaSet{rs}, orphan)
	fresh := rs.DeepCopy()
	fresh.DeletionTimestamp = &metav1.Time{Time: t0}
	e.rsW.current["ns/web"] = fresh // the cache has not seen the deletion yet
	if _, err := e.sync(t, rs); err == nil {
		t.Fatal("sync adopted for a replicaset being deleted")
	}
	if len(e.podW.patches) != 0 || len(e.podW.created) != 0 {
		t.Errorf("patches %v, created %d", e.podW.patches, len(e.podW.created))
	}
}

func TestSyncReplicaSetBeingDeletedCreatesNothing(t *testing.T) {
	t.Parallel()
	rs := mkRS("web", 3, map[string]string{"app": "web"})
	rs.DeletionTimestamp = &metav1.Time{Time: t0}
	rs.Finalizers = []string{"foregroundDeletion"}
	e := newEnv(t, []*appsv1.ReplicaSet{rs}, mkPod("p", labelled("app", "web"), ownedBy(rs)))
	e.mustSync(t, rs)
	if len(e.podW.created) != 0 || len(e.podW.deleted) != 0 {
		t.Fatalf("created %d deleted %d", len(e.podW.created), len(e.podW.deleted))
	}
	if st := e.rsW.lastStatus(); st.Replicas != 1 {
		t.Errorf("status %+v", st)
	}
}

func TestSyncRequeuesForMinReadySeconds(t *testing.T) {
	t.Parallel()
	rs := mkRS("web", 1, map[string]string{"app": "web"})
	rs.Spec.MinReadySeconds = 30
	e := newEnv(t, []*appsv1.ReplicaSet{rs}, mkPod("p", labelled("app", "web"), ownedBy(rs), readyAt(-10*time.Second)))
	res, err := e.sync(t, rs)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter < 20*time.Second || res.RequeueAfter > 21*time.Second {
		t.Errorf("RequeueAfter %v, want about 20s", res.RequeueAfter)
	}
	if st := e.rsW.lastStatus(); st.ReadyReplicas != 1 || st.AvailableReplicas != 0 {
		t.Errorf("status %+v", st)
	}
}

func TestSyncMissingReplicaSet(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	if _, err := e.r.Reconcile(context.Background(), controllers.Request{Namespace: "ns", Name: "gone"}); err != nil {
		t.Fatal(err)
	}
	if len(e.podW.created)+len(e.rsW.statuses) != 0 {
		t.Error("wrote for a missing replicaset")
	}
}

func TestPodHandlersEnqueue(t *testing.T) {
	t.Parallel()
	web := mkRS("web", 1, map[string]string{"app": "web"})
	web2 := mkRS("web2", 1, map[string]string{"app": "web"})
	db := mkRS("db", 1, map[string]string{"app": "db"})
	ghost := mkRS("ghost", 1, map[string]string{"app": "web"}) // not in the cache

	tests := []struct {
		name string
		play func(e *env)
		want []string
	}{
		{"controlled pod added", func(e *env) { e.pods.Set(mkPod("p", labelled("app", "web"), ownedBy(web))) }, []string{"ns/web"}},
		{"orphan added: every selecting replicaset", func(e *env) { e.pods.Set(mkPod("p", labelled("app", "web"))) }, []string{"ns/web", "ns/web2"}},
		{"pod of an unknown owner", func(e *env) { e.pods.Set(mkPod("p", labelled("app", "web"), ownedBy(ghost))) }, nil},
		{"relabelled controlled pod", func(e *env) {
			p := mkPod("p", labelled("app", "web"), ownedBy(web))
			e.pods.Set(p)
			e.takeQueued()
			q := p.DeepCopy()
			q.Labels["app"], q.ResourceVersion = "db", "2"
			e.pods.Set(q)
		}, []string{"ns/web"}},
		{"released pod: old owner and new selectors", func(e *env) {
			p := mkPod("p", labelled("app", "db"), ownedBy(web))
			e.pods.Set(p)
			e.takeQueued()
			q := p.DeepCopy()
			q.OwnerReferences, q.ResourceVersion = nil, "2"
			e.pods.Set(q)
		}, []string{"ns/db", "ns/web"}},
		{"same version: nothing", func(e *env) {
			p := mkPod("p", labelled("app", "web"), ownedBy(web))
			e.pods.Set(p)
			e.takeQueued()
			e.pods.Set(p.DeepCopy())
		}, nil},
		{"deleted", func(e *env) {
			p := mkPod("p", labelled("app", "web"), ownedBy(web))
			e.pods.Set(p)
			e.takeQueued()
			e.pods.Remove(p)
		}, []string{"ns/web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, []*appsv1.ReplicaSet{web, web2, db})
			tt.play(e)
			if got := e.takeQueued(); !slices.Equal(got, tt.want) {
				t.Errorf("queued %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDeletionObservedThroughGracefulDelete(t *testing.T) {
	t.Parallel()
	rs := mkRS("web", 0, map[string]string{"app": "web"})
	p := mkPod("p", labelled("app", "web"), ownedBy(rs), onNode("n"), readyAt(0))
	p.ResourceVersion = "1"
	e := newEnv(t, []*appsv1.ReplicaSet{rs}, p)
	e.mustSync(t, rs)
	if len(e.podW.deleted) != 1 || e.r.exp.Satisfied("ns/web") {
		t.Fatalf("deleted %v, satisfied %v", e.podW.deleted, e.r.exp.Satisfied("ns/web"))
	}
	// A pod on a node is deleted gracefully: it gets a deletionTimestamp first.
	q := p.DeepCopy()
	q.DeletionTimestamp, q.ResourceVersion = &metav1.Time{Time: t0}, "2"
	e.pods.Set(q)
	if !e.r.exp.Satisfied("ns/web") {
		t.Error("graceful deletion not taken as observed")
	}
}

package deployment

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubebus/kubebus/controllers"
)

// env is a reconciler over fake caches and a fake API server; catchUp plays
// the bus (the caches take the API server's state) and rsController plays
// the ReplicaSet controller and kubelets.
type env struct {
	api   *fakeAPI
	deps  *fakeInformer[*appsv1.Deployment]
	rsets *fakeInformer[*appsv1.ReplicaSet]
	pods  *fakeInformer[*corev1.Pod]
	rec   *fakeRecorder
	r     *reconciler
	clock time.Time
}

func newEnv(t *testing.T, d *appsv1.Deployment, rss ...*appsv1.ReplicaSet) *env {
	t.Helper()
	e := &env{deps: newFakeInformer[*appsv1.Deployment](), rsets: newFakeInformer[*appsv1.ReplicaSet](),
		pods: newFakeInformer[*corev1.Pod](), rec: &fakeRecorder{}, clock: t0}
	e.api = newFakeAPI(func() time.Time { return e.clock })
	e.api.deps[keyOfObj(d)] = d.DeepCopy()
	for _, rs := range rss {
		e.api.rsets[keyOfObj(rs)] = rs.DeepCopy()
	}
	cfg := Config{Deployments: e.deps, ReplicaSets: e.rsets, Pods: e.pods, Recorder: e.rec,
		Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return e.clock }}
	e.r = newReconciler(cfg, writers{rsets: e.api, deps: fakeDeps{e.api}})
	e.r.register(func(controllers.Request) {})
	e.catchUp()
	return e
}

func (e *env) sync(t *testing.T) (controllers.Result, error) {
	t.Helper()
	return e.r.Reconcile(context.Background(), controllers.Request{Namespace: "ns", Name: "web"})
}

func (e *env) mustSync(t *testing.T) controllers.Result {
	t.Helper()
	res, err := e.sync(t)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	return res
}

// catchUp makes the caches hold what the API server holds.
func (e *env) catchUp() {
	e.api.mu.Lock()
	deps := map[string]*appsv1.Deployment{}
	for k, d := range e.api.deps {
		deps[k] = d.DeepCopy()
	}
	rss := map[string]*appsv1.ReplicaSet{}
	for k, rs := range e.api.rsets {
		rss[k] = rs.DeepCopy()
	}
	e.api.mu.Unlock()
	for _, d := range deps {
		if cur, ok := e.deps.Get(d.Namespace, d.Name); !ok || cur.ResourceVersion != d.ResourceVersion {
			e.deps.Set(d)
		}
	}
	for _, rs := range rss {
		if cur, ok := e.rsets.Get(rs.Namespace, rs.Name); !ok || cur.ResourceVersion != rs.ResourceVersion {
			e.rsets.Set(rs)
		}
	}
	for _, rs := range e.rsets.ListNamespace("ns") {
		if _, ok := rss[keyOfObj(rs)]; !ok {
			e.rsets.Remove(rs)
		}
	}
}

// rsController plays the ReplicaSet controller and the kubelets for one
// step: each ReplicaSet gets its spec's pods at once; pods that already
// existed become available.
func (e *env) rsController() {
	e.api.mu.Lock()
	defer e.api.mu.Unlock()
	for _, rs := range e.api.rsets {
		avail := min(rs.Status.Replicas, *rs.Spec.Replicas)
		if rs.Status.Replicas == *rs.Spec.Replicas && rs.Status.AvailableReplicas == avail && rs.Status.ObservedGeneration == rs.Generation {
			continue
		}
		rs.Status = appsv1.ReplicaSetStatus{Replicas: *rs.Spec.Replicas, ReadyReplicas: avail, AvailableReplicas: avail, ObservedGeneration: rs.Generation}
		rs.ResourceVersion = e.api.nextRV()
	}
}

func (e *env) deployment() *appsv1.Deployment {
	e.api.mu.Lock()
	defer e.api.mu.Unlock()
	return e.api.deps["ns/web"].DeepCopy()
}

func (e *env) replicaSets() []*appsv1.ReplicaSet {
	e.api.mu.Lock()
	defer e.api.mu.Unlock()
	var out []*appsv1.ReplicaSet
	for _, rs := range e.api.rsets {
		out = append(out, rs.DeepCopy())
	}
	slices.SortFunc(out, olderFirst)
	return out
}

// setSpec changes the Deployment's spec as a user would.
func (e *env) setSpec(f func(*appsv1.DeploymentSpec)) {
	e.api.mu.Lock()
	d := e.api.deps["ns/web"]
	f(&d.Spec)
	d.Generation++
	d.ResourceVersion = e.api.nextRV()
	e.api.mu.Unlock()
	e.catchUp()
}

func (e *env) writes() []string {
	e.api.mu.Lock()
	defer e.api.mu.Unlock()
	w := e.api.writes
	e.api.writes = nil
	return w
}

func TestSyncCreatesTheFirstReplicaSet(t *testing.T) {
	t.Parallel()
	d := mkDeployment(3, "img:1")
	e := newEnv(t, d)
	e.mustSync(t)
	rss := e.replicaSets()
	if len(rss) != 1 || *rss[0].Spec.Replicas != 3 || rss[0].Annotations[RevisionAnnotation] != "1" {
		t.Fatalf("replicasets %+v", rss)
	}
	got := e.deployment()
	if got.Annotations[RevisionAnnotation] != "1" {
		t.Errorf("deployment revision %q", got.Annotations[RevisionAnnotation])
	}
	if c := getCondition(got.Status, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonNewRSCreated {
		t.Errorf("progressing %+v", c)
	}
	if !slices.ContainsFunc(e.rec.events, func(s string) bool {
		return strings.HasPrefix(s, "Normal ScalingReplicaSet Scaled up replica set "+rss[0].Name+" from 0 to 3")
	}) {
		t.Errorf("events %v", e.rec.events)
	}
	// The cache shows the Deployment's new revision but not yet the new
	// ReplicaSet: the next sync finds it by name and does not create another.
	e.writes()
	e.deps.Set(e.deployment())
	e.mustSync(t)
	if n := len(e.replicaSets()); n != 1 {
		t.Fatalf("%d replicasets", n)
	}
	for _, w := range e.writes() {
		if strings.HasPrefix(w, "create") {
			t.Errorf("unexpected %s", w)
		}
	}
}

func TestSyncHashCollision(t *testing.T) {
	t.Parallel()
	d := mkDeployment(3, "img:1")
	squatter := newReplicaSet(d, 1)
	squatter.Spec.Template = template("img:other")
	squatter.OwnerReferences = nil
	squatter.Labels = map[string]string{"app": "other"}
	e := newEnv(t, d)
	e.api.rsets[keyOfObj(squatter)] = squatter // not in the cache
	if _, err := e.sync(t); err == nil || !strings.Contains(err.Error(), "collision") {
		t.Fatalf("sync error %v", err)
	}
	if cc := e.deployment().Status.CollisionCount; cc == nil || *cc != 1 {
		t.Fatalf("collisionCount %v", cc)
	}
	e.catchUp()
	e.mustSync(t)
	if n := len(e.replicaSets()); n != 2 {
		t.Errorf("%d replicasets after the collision, want 2", n)
	}
}

func TestSyncCreateFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mkDeployment(3, "img:1"))
	e.api.createErr = errors.New("quota")
	if _, err := e.sync(t); err == nil {
		t.Fatal("no error")
	}
	if c := getCondition(e.deployment().Status, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonRSCreateError || c.Status != corev1.ConditionFalse {
		t.Errorf("progressing %+v", c)
	}
}

// converge runs syncs, cache catch-ups and ReplicaSet steps until nothing
// changes, checking the rolling-update bounds after every step: never more
// than maxPods pods, and availability never falling while below
// minAvailable.
func converge(t *testing.T, e *env, maxPods, minAvailable int32) {
	t.Helper()
	prevAvail := sumStatus(e.replicaSets(), func(s appsv1.ReplicaSetStatus) int32 { return s.AvailableReplicas })
	for i := 0; i < 200; i++ {
		e.clock = e.clock.Add(time.Second)
		e.catchUp()
		e.mustSync(t)
		e.catchUp()
		w := e.writes()
		var pods, avail int32
		for _, rs := range e.replicaSets() {
			pods += max(*rs.Spec.Replicas, rs.Status.Replicas)
		}
		e.rsController()
		e.catchUp()
		for _, rs := range e.replicaSets() {
			avail += rs.Status.AvailableReplicas
		}
		if pods > maxPods {
			t.Fatalf("step %d: %d pods, limit %d (writes %v)", i, pods, maxPods, w)
		}
		if avail < minAvailable && avail < prevAvail {
			t.Fatalf("step %d: %d available (was %d), floor %d (writes %v)", i, avail, prevAvail, minAvailable, w)
		}
		prevAvail = avail
		d := e.deployment()
		if len(w) == 0 && deploymentComplete(d, &d.Status) {
			return
		}
	}
	t.Fatalf("no convergence: %+v", e.deployment().Status)
}

func TestRollingUpdateConverges(t *testing.T) {
	t.Parallel()
	two := int32(2)
	d := mkDeployment(10, "img:1", func(d *appsv1.Deployment) { d.Spec.RevisionHistoryLimit = &two })
	e := newEnv(t, d)
	converge(t, e, 10, 0)
	for i, img := range []string{"img:2", "img:3", "img:4", "img:5"} {
		e.setSpec(func(s *appsv1.DeploymentSpec) { s.Template = template(img) })
		converge(t, e, 12, 9)
		d := e.deployment()
		rss := e.replicaSets()
		newRS, old := splitReplicaSets(d, rss)
		if newRS == nil || *newRS.Spec.Replicas != 10 || sumSpec(old) != 0 {
			t.Fatalf("%s: new %v old %v", img, newRS, names(old))
		}
		if want := min(i+1, 2); len(old) != want {
			t.Errorf("%s: %d old replicasets, want %d", img, len(old), want)
		}
		if d.Annotations[RevisionAnnotation] != newRS.Annotations[RevisionAnnotation] || revision(newRS) != int64(i+2) {
			t.Errorf("%s: revisions deployment %s replicaset %s", img, d.Annotations[RevisionAnnotation], newRS.Annotations[RevisionAnnotation])
		}
		if c := getCondition(d.Status, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonNewRSAvailable {
			t.Errorf("%s: progressing %+v", img, c)
		}
	}
	// Roll back to img:4 (revision 4): its ReplicaSet comes back as revision 6.
	e.setSpec(func(s *appsv1.DeploymentSpec) { s.Template = template("img:4") })
	converge(t, e, 12, 9)
	newRS, _ := splitReplicaSets(e.deployment(), e.replicaSets())
	if newRS.Annotations[RevisionAnnotation] != "6" || newRS.Annotations[RevisionHistoryAnnotation] != "4" {
		t.Errorf("rolled back replicaset annotations %v", newRS.Annotations)
	}
}

func TestScalingMidRolloutIsProportional(t *testing.T) {
	t.Parallel()
	pct := intstr.FromString
	d := mkDeployment(10, "img:1", surgeUnavail(pct("25%"), pct("25%")))
	e := newEnv(t, d)
	converge(t, e, 10, 0)
	e.setSpec(func(s *appsv1.DeploymentSpec) { s.Template = template("img:2") })
	// One step: the new ReplicaSet gets the surge (3).
	e.mustSync(t)
	e.catchUp()
	e.rsController()
	e.catchUp()
	e.setSpec(func(s *appsv1.DeploymentSpec) { v := int32(20); s.Replicas = &v })
	e.mustSync(t)
	newRS, old := splitReplicaSets(e.deployment(), e.replicaSets())
	// 13 pods for 10+3 become 20+5: each grows by 25/13.
	if total := sumSpec(old) + replicas(newRS); total != 25 {
		t.Errorf("total %d, want 25 (old %d new %d)", total, sumSpec(old), replicas(newRS))
	}
	if replicas(newRS) != 6 && replicas(newRS) != 5 {
		t.Errorf("new replicaset %d, want about 3*25/13", replicas(newRS))
	}
	converge(t, e, 25, 15)
}

func TestRecreateWaitsForOldPods(t *testing.T) {
	t.Parallel()
	d := mkDeployment(3, "img:2", recreate)
	old := mkRS(d, "web-old", "img:1", "1", 3)
	e := newEnv(t, d, old)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "p-uid",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(old, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}}}
	e.pods.Set(pod)
	e.mustSync(t)
	if rss := e.replicaSets(); len(rss) != 1 || *rss[0].Spec.Replicas != 0 {
		t.Fatalf("old replicaset not scaled down first: %v", rss)
	}
	e.catchUp()
	e.rsController()
	e.catchUp()
	e.mustSync(t)
	if n := len(e.replicaSets()); n != 1 {
		t.Fatalf("new replicaset created while an old pod runs")
	}
	e.pods.Remove(pod)
	e.catchUp()
	e.mustSync(t)
	newRS, _ := splitReplicaSets(e.deployment(), e.replicaSets())
	if newRS == nil || *newRS.Spec.Replicas != 3 {
		t.Fatalf("new replicaset %v", newRS)
	}
}

func TestPausedDeploymentOnlyScales(t *testing.T) {
	t.Parallel()
	d := mkDeployment(3, "img:1")
	e := newEnv(t, d)
	converge(t, e, 3, 0)
	e.setSpec(func(s *appsv1.DeploymentSpec) {
		s.Paused = true
		s.Template = template("img:2")
		v := int32(5)
		s.Replicas = &v
	})
	for range 3 {
		e.mustSync(t)
		e.catchUp()
		e.rsController()
		e.catchUp()
	}
	rss := e.replicaSets()
	if len(rss) != 1 || *rss[0].Spec.Replicas != 5 {
		t.Fatalf("paused: replicasets %v", rss)
	}
	got := e.deployment()
	if c := getCondition(got.Status, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonPaused || c.Status != corev1.ConditionUnknown {
		t.Errorf("progressing %+v", c)
	}
	if got.Status.ObservedGeneration != got.Generation {
		t.Errorf("observed generation %d of %d", got.Status.ObservedGeneration, got.Generation)
	}
	e.setSpec(func(s *appsv1.DeploymentSpec) { s.Paused = false })
	converge(t, e, 7, 4)
	if newRS, _ := splitReplicaSets(e.deployment(), e.replicaSets()); newRS == nil || *newRS.Spec.Replicas != 5 {
		t.Fatalf("after resume: %v", newRS)
	}
}

func TestSyncAdoptsOrphanReplicaSet(t *testing.T) {
	t.Parallel()
	d := mkDeployment(3, "img:1")
	orphan := mkRS(d, "web-orphan", "img:1", "", 3, func(rs *appsv1.ReplicaSet) { rs.OwnerReferences = nil })
	e := newEnv(t, d, orphan)
	e.mustSync(t)
	rss := e.replicaSets()
	if len(rss) != 1 || metav1.GetControllerOf(rss[0]) == nil || metav1.GetControllerOf(rss[0]).UID != d.UID {
		t.Fatalf("replicasets %v", rss)
	}
}

func TestSyncDeploymentBeingDeletedOnlyWritesStatus(t *testing.T) {
	t.Parallel()
	d := mkDeployment(3, "img:2")
	d.DeletionTimestamp = &metav1.Time{Time: t0}
	e := newEnv(t, d, mkRS(d, "web-old", "img:1", "1", 3))
	e.mustSync(t)
	for _, w := range e.writes() {
		if !strings.HasPrefix(w, "status") {
			t.Errorf("unexpected %s", w)
		}
	}
	if st := e.deployment().Status; st.Replicas != 3 || st.UpdatedReplicas != 0 {
		t.Errorf("status %+v", st)
	}
}

func TestHandlersEnqueue(t *testing.T) {
	t.Parallel()
	web := mkDeployment(3, "img:1")
	other := mkDeployment(3, "img:1", func(d *appsv1.Deployment) { d.Name, d.UID = "other", "other-uid" })
	db := mkDeployment(3, "img:1", func(d *appsv1.Deployment) {
		d.Name, d.UID = "db", "db-uid"
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	})
	rcreate := mkDeployment(3, "img:1", recreate, func(d *appsv1.Deployment) {
		d.Name, d.UID = "rc", "rc-uid"
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rc"}}
	})
	orphan := func(rs *appsv1.ReplicaSet) { rs.OwnerReferences = nil }
	podOf := func(rs *appsv1.ReplicaSet) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}}}
	}
	tests := []struct {
		name string
		play func(rsets *fakeInformer[*appsv1.ReplicaSet], pods *fakeInformer[*corev1.Pod])
		want []string
	}{
		{"owned replicaset added", func(rsets *fakeInformer[*appsv1.ReplicaSet], _ *fakeInformer[*corev1.Pod]) {
			rsets.Set(mkRS(web, "rs", "img:1", "1", 3))
		}, []string{"ns/web"}},
		{"orphan added: every selecting deployment", func(rsets *fakeInformer[*appsv1.ReplicaSet], _ *fakeInformer[*corev1.Pod]) {
			rsets.Set(mkRS(web, "rs", "img:1", "1", 3, orphan))
		}, []string{"ns/other", "ns/web"}},
		{"owner changed: both", func(rsets *fakeInformer[*appsv1.ReplicaSet], _ *fakeInformer[*corev1.Pod]) {
			rs := mkRS(web, "rs", "img:1", "1", 3)
			rsets.Put(rs)
			moved := mkRS(other, "rs", "img:1", "1", 3)
			moved.ResourceVersion = "2"
			rsets.Set(moved)
		}, []string{"ns/other", "ns/web"}},
		{"deleted", func(rsets *fakeInformer[*appsv1.ReplicaSet], _ *fakeInformer[*corev1.Pod]) {
			rs := mkRS(web, "rs", "img:1", "1", 3)
			rsets.Put(rs)
			rsets.Remove(rs)
		}, []string{"ns/web"}},
		{"pod of a Recreate deployment deleted", func(rsets *fakeInformer[*appsv1.ReplicaSet], pods *fakeInformer[*corev1.Pod]) {
			rs := mkRS(rcreate, "rs", "img:1", "1", 3)
			rsets.Put(rs)
			pods.Remove(podOf(rs))
		}, []string{"ns/rc"}},
		{"pod of a RollingUpdate deployment deleted", func(rsets *fakeInformer[*appsv1.ReplicaSet], pods *fakeInformer[*corev1.Pod]) {
			rs := mkRS(web, "rs", "img:1", "1", 3)
			rsets.Put(rs)
			pods.Remove(podOf(rs))
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			deps := newFakeInformer(web, other, db, rcreate)
			rsets, pods := newFakeInformer[*appsv1.ReplicaSet](), newFakeInformer[*corev1.Pod]()
			var got []string
			r := newReconciler(Config{Deployments: deps, ReplicaSets: rsets, Pods: pods, Recorder: &fakeRecorder{},
				Logger: slog.New(slog.DiscardHandler), Now: time.Now}, writers{})
			r.register(func(req controllers.Request) { got = append(got, req.String()) })
			tt.play(rsets, pods)
			slices.Sort(got)
			if !slices.Equal(slices.Compact(got), tt.want) {
				t.Errorf("queued %v, want %v", got, tt.want)
			}
		})
	}
}

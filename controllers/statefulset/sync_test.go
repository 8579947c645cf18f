package statefulset

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/controllertest"
	"github.com/kubebus/kubebus/controllers/history"
)

type fixture struct {
	client *fake.Clientset
	sets   *controllertest.Informer[*appsv1.StatefulSet]
	pods   *controllertest.Informer[*corev1.Pod]
	revs   *controllertest.Informer[*appsv1.ControllerRevision]
	claims *controllertest.Informer[*corev1.PersistentVolumeClaim]
	rec    *record.FakeRecorder
	r      *reconciler
}

func newFixture(t *testing.T, set *appsv1.StatefulSet) *fixture {
	t.Helper()
	f := &fixture{
		client: fake.NewClientset(set),
		sets:   controllertest.NewInformer(set),
		pods:   controllertest.NewInformer[*corev1.Pod](),
		revs:   controllertest.NewInformer[*appsv1.ControllerRevision](),
		claims: controllertest.NewInformer[*corev1.PersistentVolumeClaim](),
		rec:    record.NewFakeRecorder(100),
	}
	cfg := Config{Client: f.client, StatefulSets: f.sets, Pods: f.pods, ControllerRevisions: f.revs, PersistentVolumeClaims: f.claims,
		Recorder: f.rec, Now: func() time.Time { return now }}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	f.r = newReconciler(cfg)
	return f
}

// sync reconciles the set and then copies what the API holds into the
// caches, as the bus would.
func (f *fixture) sync(t *testing.T) {
	t.Helper()
	if _, err := f.r.Reconcile(context.Background(), controllers.Request{Namespace: "ns", Name: "web"}); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	ctx := context.Background()
	pods, _ := f.client.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	for _, p := range f.pods.ListNamespace("ns") {
		f.pods.Remove(p)
	}
	for i := range pods.Items {
		f.pods.Put(&pods.Items[i])
	}
	revs, _ := f.client.AppsV1().ControllerRevisions("ns").List(ctx, metav1.ListOptions{})
	for _, r := range f.revs.ListNamespace("ns") {
		f.revs.Remove(r)
	}
	for i := range revs.Items {
		f.revs.Put(&revs.Items[i])
	}
	claims, _ := f.client.CoreV1().PersistentVolumeClaims("ns").List(ctx, metav1.ListOptions{})
	for i := range claims.Items {
		f.claims.Put(&claims.Items[i])
	}
	set, err := f.client.AppsV1().StatefulSets("ns").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.sets.Put(set)
}

// run marks a pod Running and Ready, as the kubelet would.
func (f *fixture) run(t *testing.T, name string) {
	t.Helper()
	p, err := f.client.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
	if _, err := f.client.CoreV1().Pods("ns").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.pods.Put(p)
}

func (f *fixture) podNames() []string {
	var out []string
	for _, p := range f.pods.ListNamespace("ns") {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

func (f *fixture) set(t *testing.T) *appsv1.StatefulSet {
	s, ok := f.sets.Get("ns", "web")
	if !ok {
		t.Fatal("no set")
	}
	return s
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestReconcileLifecycle(t *testing.T) {
	t.Parallel()
	set := testSet(2)
	f := newFixture(t, set)
	// New pods get a phase from the API server; the fake does not: give
	// them Pending as the real one does.
	f.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		p.Status.Phase = corev1.PodPending
		return false, nil, nil
	})

	f.sync(t)
	if got := f.podNames(); !slices.Equal(got, []string{"web-0"}) {
		t.Fatalf("pods = %v", got)
	}
	if _, ok := f.claims.Get("ns", "data-web-0"); !ok {
		t.Fatal("no claim data-web-0")
	}
	revs := f.revs.ListNamespace("ns")
	if len(revs) != 1 || revs[0].Revision != 1 {
		t.Fatalf("revisions = %v", revs)
	}
	st := f.set(t).Status
	if st.UpdateRevision != revs[0].Name || st.CurrentRevision != revs[0].Name || st.ObservedGeneration != 2 || st.CollisionCount == nil {
		t.Fatalf("status = %+v", st)
	}
	if p, _ := f.pods.Get("ns", "web-0"); podRevision(p) != revs[0].Name {
		t.Fatalf("web-0 is at %q", podRevision(p))
	}
	evs := f.events()
	if !slices.Contains(evs, "Normal SuccessfulCreate create Pod web-0 in StatefulSet web successful") ||
		!slices.Contains(evs, "Normal SuccessfulCreate create Claim data-web-0 Pod web-0 in StatefulSet web success") {
		t.Fatalf("events = %q", evs)
	}

	// Not ready: nothing more.
	f.sync(t)
	if got := f.podNames(); len(got) != 1 {
		t.Fatalf("pods = %v", got)
	}
	f.run(t, "web-0")
	f.sync(t)
	f.run(t, "web-1")
	f.sync(t)
	if st := f.set(t).Status; st.Replicas != 2 || st.ReadyReplicas != 2 || st.AvailableReplicas != 2 || st.CurrentReplicas != 2 || st.UpdatedReplicas != 2 {
		t.Fatalf("status = %+v", st)
	}

	// A new template: a second revision, and the highest ordinal goes first.
	changed := f.set(t).DeepCopy()
	changed.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	changed.Generation = 3
	if _, err := f.client.AppsV1().StatefulSets("ns").Update(context.Background(), changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sets.Put(changed)
	f.sync(t)
	if got := f.podNames(); !slices.Equal(got, []string{"web-0"}) {
		t.Fatalf("pods after the update began = %v", got)
	}
	st = f.set(t).Status
	if st.CurrentRevision == st.UpdateRevision || st.CurrentReplicas != 1 || st.UpdatedReplicas != 0 {
		t.Fatalf("status = %+v", st)
	}
	f.sync(t)
	p, _ := f.pods.Get("ns", "web-1")
	if p == nil || podRevision(p) != st.UpdateRevision || p.Spec.Containers[0].Image != "busybox:2" {
		t.Fatalf("web-1 = %+v", p)
	}
	f.run(t, "web-1")
	f.sync(t)
	f.sync(t)
	f.run(t, "web-0")
	f.sync(t)
	st = f.set(t).Status
	if st.CurrentRevision != st.UpdateRevision || st.UpdatedReplicas != 2 || st.CurrentReplicas != 2 {
		t.Fatalf("status after the update = %+v", st)
	}

	// Back to the first template: its revision is renumbered, not copied.
	back := f.set(t).DeepCopy()
	back.Spec.Template.Spec.Containers[0].Image = "busybox"
	f.sets.Put(back)
	f.sync(t)
	var numbers []string
	for _, r := range f.revs.ListNamespace("ns") {
		numbers = append(numbers, r.Name+"="+strings.Repeat("I", int(r.Revision)))
	}
	revs = f.revs.ListNamespace("ns")
	history.SortControllerRevisions(revs)
	if len(revs) != 2 || revs[1].Revision != 3 || revs[1].Name != f.set(t).Status.UpdateRevision {
		t.Fatalf("revisions after the rollback = %v", numbers)
	}
}

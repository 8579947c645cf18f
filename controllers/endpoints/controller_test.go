package endpoints

import (
	"context"
	"github.com/kubebus/kubebus/controllers/endpointutil"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubebus/kubebus/controllers"
)

// store is a cache the test fills.
type store[T metav1.Object] map[string]T

func (s store[T]) Get(ns, name string) (T, bool) { v, ok := s[ns+"/"+name]; return v, ok }

func (s store[T]) ListNamespace(ns string) []T {
	var out []T
	for _, v := range s {
		if v.GetNamespace() == ns {
			out = append(out, v)
		}
	}
	return out
}

func (s store[T]) add(objs ...T) store[T] {
	for _, o := range objs {
		s[o.GetNamespace()+"/"+o.GetName()] = o
	}
	return s
}

type fixture struct {
	r         *reconciler
	client    *fake.Clientset
	services  store[*corev1.Service]
	pods      store[*corev1.Pod]
	endpoints store[*corev1.Endpoints]
}

func newFixture() *fixture {
	f := &fixture{client: fake.NewClientset(), services: store[*corev1.Service]{}, pods: store[*corev1.Pod]{}, endpoints: store[*corev1.Endpoints]{}}
	f.r = &reconciler{client: f.client, services: f.services, pods: f.pods, endpoints: f.endpoints, log: slog.New(slog.DiscardHandler)}
	return f
}

func (f *fixture) reconcile(t *testing.T) {
	t.Helper()
	if _, err := f.r.Reconcile(context.Background(), controllers.Request{Namespace: "ns", Name: "web"}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
}

// writes returns the verbs and the objects written.
func (f *fixture) writes() ([]string, []runtime.Object) {
	var verbs []string
	var objs []runtime.Object
	for _, a := range f.client.Actions() {
		switch a.GetVerb() {
		case "create", "update":
			verbs, objs = append(verbs, a.GetVerb()), append(objs, a.(k8stesting.CreateAction).GetObject())
		case "delete":
			verbs, objs = append(verbs, "delete"), append(objs, nil)
		}
	}
	return verbs, objs
}

func TestReconcileCreatesEndpoints(t *testing.T) {
	t.Parallel()
	f := newFixture()
	f.services.add(newService(func(s *corev1.Service) { s.Labels = map[string]string{"team": "a"} }))
	f.pods.add(newPod("a", "10.0.0.1", true), newPod("b", "10.0.0.2", false),
		newPod("other", "10.0.0.3", true, func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} }))
	f.reconcile(t)
	verbs, objs := f.writes()
	if len(verbs) != 1 || verbs[0] != "create" {
		t.Fatalf("writes = %v, want one create", verbs)
	}
	ep := objs[0].(*corev1.Endpoints)
	if ep.Name != "web" || ep.Labels["team"] != "a" || ep.Labels[LabelManagedBy] != ManagedByValue {
		t.Fatalf("endpoints meta = %+v", ep.ObjectMeta)
	}
	if len(ep.Subsets) != 1 || len(ep.Subsets[0].Addresses) != 1 || ep.Subsets[0].Addresses[0].IP != "10.0.0.1" ||
		len(ep.Subsets[0].NotReadyAddresses) != 1 || ep.Subsets[0].NotReadyAddresses[0].IP != "10.0.0.2" {
		t.Fatalf("subsets = %+v", ep.Subsets)
	}
}

func TestReconcileSkipsUnchangedAndUpdatesChanged(t *testing.T) {
	t.Parallel()
	f := newFixture()
	svc := newService()
	f.services.add(svc)
	f.pods.add(newPod("a", "10.0.0.1", true))
	subsets, _ := desiredSubsets(svc, []*corev1.Pod{f.pods["ns/a"]})
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: "7", Labels: desiredLabels(svc)},
		Subsets:    subsets,
	}
	f.endpoints.add(ep)
	if err := f.client.Tracker().Add(ep.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t)
	if verbs, _ := f.writes(); len(verbs) != 0 {
		t.Fatalf("writes = %v, want none", verbs)
	}
	f.pods.add(newPod("a", "10.0.0.1", false))
	f.reconcile(t)
	verbs, objs := f.writes()
	if len(verbs) != 1 || verbs[0] != "update" {
		t.Fatalf("writes = %v, want one update", verbs)
	}
	ep = objs[0].(*corev1.Endpoints)
	if ep.ResourceVersion != "7" || len(ep.Subsets[0].Addresses) != 0 || len(ep.Subsets[0].NotReadyAddresses) != 1 {
		t.Fatalf("updated endpoints = %+v", ep)
	}
}

func TestReconcileLeavesSelectorlessServices(t *testing.T) {
	t.Parallel()
	f := newFixture()
	f.services.add(newService(func(s *corev1.Service) { s.Spec.Selector = nil }))
	f.endpoints.add(&corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "192.0.2.1"}}}}})
	f.reconcile(t)
	if verbs, _ := f.writes(); len(verbs) != 0 {
		t.Fatalf("writes = %v, want none", verbs)
	}
}

func TestReconcileDeletesOwnEndpointsOfDeletedService(t *testing.T) {
	t.Parallel()
	f := newFixture()
	f.endpoints.add(&corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{LabelManagedBy: ManagedByValue}}})
	f.reconcile(t)
	if verbs, _ := f.writes(); len(verbs) != 1 || verbs[0] != "delete" {
		t.Fatalf("writes = %v, want one delete", verbs)
	}

	g := newFixture() // someone else's Endpoints without a service stay
	g.endpoints.add(&corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}})
	g.reconcile(t)
	if verbs, _ := g.writes(); len(verbs) != 0 {
		t.Fatalf("writes = %v, want none", verbs)
	}
}

func TestServicesForAndPodChanged(t *testing.T) {
	t.Parallel()
	services := store[*corev1.Service]{}.add(
		newService(),
		newService(func(s *corev1.Service) { s.Name = "all-web"; s.Spec.Selector = map[string]string{"app": "web"} }),
		newService(func(s *corev1.Service) { s.Name = "db"; s.Spec.Selector = map[string]string{"app": "db"} }),
		newService(func(s *corev1.Service) { s.Name = "manual"; s.Spec.Selector = nil }),
		newService(func(s *corev1.Service) { s.Name = "elsewhere"; s.Namespace = "other" }),
	)
	if got := endpointutil.ServicesFor(services, newPod("a", "10.0.0.1", true)); len(got) != 2 {
		t.Fatalf("services for pod = %d, want 2", len(got))
	}
	old := newPod("a", "10.0.0.1", true)
	tests := []struct {
		name string
		mut  func(*corev1.Pod)
		want bool
	}{
		{name: "nothing", mut: func(*corev1.Pod) {}, want: false},
		{name: "annotation only", mut: func(p *corev1.Pod) { p.Annotations = map[string]string{"x": "y"} }, want: false},
		{name: "ip", mut: func(p *corev1.Pod) { p.Status.PodIP = "10.0.0.9"; p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.9"}} }, want: true},
		{name: "readiness", mut: func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }, want: true},
		{name: "labels", mut: func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} }, want: true},
		{name: "deletion", mut: func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }, want: true},
	}
	for _, tc := range tests {
		pod := old.DeepCopy()
		tc.mut(pod)
		if got := endpointutil.PodChanged(old, pod); got != tc.want {
			t.Errorf("%s: podChanged = %v, want %v", tc.name, got, tc.want)
		}
	}
}

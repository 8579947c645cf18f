package resourcequota

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

// source is an in-memory cache whose set and remove play bus events.
type source[T interface {
	runtime.Object
	metav1.Object
}] struct {
	mu       sync.Mutex
	objs     map[string]T
	handlers []informer.Handler[T]
}

func newSource[T interface {
	runtime.Object
	metav1.Object
}](objs ...T) *source[T] {
	s := &source[T]{objs: map[string]T{}}
	for _, o := range objs {
		s.objs[o.GetNamespace()+"/"+o.GetName()] = o
	}
	return s
}

func (s *source[T]) Get(ns, name string) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objs[ns+"/"+name]
	return o, ok
}

func (s *source[T]) List() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []T
	for _, o := range s.objs {
		out = append(out, o)
	}
	return out
}

func (s *source[T]) ListNamespace(ns string) []T {
	var out []T
	for _, o := range s.List() {
		if o.GetNamespace() == ns {
			out = append(out, o)
		}
	}
	return out
}

func (s *source[T]) AddHandler(h informer.Handler[T]) { s.handlers = append(s.handlers, h) }

func (s *source[T]) set(o T) {
	s.mu.Lock()
	old, had := s.objs[o.GetNamespace()+"/"+o.GetName()]
	s.objs[o.GetNamespace()+"/"+o.GetName()] = o
	s.mu.Unlock()
	for _, h := range s.handlers {
		if had {
			h.OnUpdate(old, o)
		} else {
			h.OnAdd(o)
		}
	}
}

func (s *source[T]) remove(o T) {
	s.mu.Lock()
	delete(s.objs, o.GetNamespace()+"/"+o.GetName())
	s.mu.Unlock()
	for _, h := range s.handlers {
		h.OnDelete(o)
	}
}

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func newQuota(hard, used corev1.ResourceList) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns", ResourceVersion: "1"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	if used != nil {
		q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: used}
	}
	return q
}

func newPod(ns, name, cpu string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: rl("cpu", cpu)}}}},
		Status: corev1.PodStatus{Phase: phase}}
}

// newClaim is a claim requesting storage of class (none when empty),
// allocated allocated (none when empty).
func newClaim(ns, name, class, storage, allocated string) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: rl("storage", storage)}}}
	if class != "" {
		pvc.Spec.StorageClassName = &class
	}
	if allocated != "" {
		pvc.Status.AllocatedResources = rl("storage", allocated)
	}
	return pvc
}

func newMeta(ns, name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
}

var configmaps = schema.GroupResource{Resource: "configmaps"}

// The bus caches the controller-manager shares fit the controller's Config.
var (
	_ QuotaSource                           = (*informer.Informer[*corev1.ResourceQuota])(nil)
	_ Source[*corev1.Pod]                   = (*informer.Informer[*corev1.Pod])(nil)
	_ Source[*corev1.PersistentVolumeClaim] = (*informer.Informer[*corev1.PersistentVolumeClaim])(nil)
	_ Source[*metav1.PartialObjectMetadata] = (*informer.MetadataView[*corev1.ConfigMap])(nil)
)

type fixture struct {
	c        *Controller
	client   *fake.Clientset
	quotas   *source[*corev1.ResourceQuota]
	pods     *source[*corev1.Pod]
	services *source[*corev1.Service]
	claims   *source[*corev1.PersistentVolumeClaim]
	cms      *source[*metav1.PartialObjectMetadata]
}

func newFixture(t *testing.T, q *corev1.ResourceQuota) *fixture {
	t.Helper()
	f := &fixture{
		client: fake.NewClientset(q), quotas: newSource(q),
		pods: newSource(
			newPod("ns", "a", "100m", corev1.PodRunning), newPod("ns", "b", "200m", corev1.PodPending),
			newPod("ns", "done", "1", corev1.PodSucceeded), newPod("other", "c", "1", corev1.PodRunning)),
		services: newSource(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}),
		claims: newSource(newClaim("ns", "data", "gold", "1Gi", ""), newClaim("ns", "logs", "", "500Mi", "2Gi"),
			newClaim("other", "x", "gold", "10Gi", "")),
		cms: newSource(newMeta("ns", "cm1"), newMeta("other", "cm2")),
	}
	c, err := New(Config{Client: f.client, Quotas: f.quotas, Pods: f.pods, Services: f.services, Claims: f.claims,
		Objects: map[schema.GroupResource]Source[*metav1.PartialObjectMetadata]{configmaps: f.cms},
		Now:     func() time.Time { return time.Unix(1000, 0) }, Resync: time.Hour,
		Options: controllers.Options{Logger: slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	return f
}

// reconcile reconciles ns/q once, counting the resources added to f.c at
// runtime too.
func (f *fixture) reconcile(t *testing.T) controllers.Result {
	t.Helper()
	r := &reconciler{client: f.client, quotas: f.quotas, pods: f.pods, services: f.services, claims: f.claims,
		objects: map[schema.GroupResource]Source[*metav1.PartialObjectMetadata]{configmaps: f.cms}, runtime: f.c.rt,
		now: func() time.Time { return time.Unix(1000, 0) }, log: slog.New(slog.DiscardHandler)}
	res, err := r.Reconcile(context.Background(), controllers.Request{Namespace: "ns", Name: "q"})
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	return res
}

// statusWrites returns the statuses the controller wrote.
func (f *fixture) statusWrites() []corev1.ResourceQuotaStatus {
	var out []corev1.ResourceQuotaStatus
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			out = append(out, a.(k8stesting.UpdateAction).GetObject().(*corev1.ResourceQuota).Status)
		}
	}
	return out
}

func TestReconcile(t *testing.T) {
	t.Parallel()
	hard := rl("pods", "10", "requests.cpu", "2", "count/pods", "10", "services.nodeports", "2", "configmaps", "5", "count/widgets.example.com", "3")
	tests := []struct {
		name  string
		quota *corev1.ResourceQuota
		want  *corev1.ResourceQuotaStatus // nil: no write
	}{
		{
			name:  "first sync",
			quota: newQuota(hard, nil),
			want: &corev1.ResourceQuotaStatus{Hard: hard, Used: rl("pods", "2", "requests.cpu", "300m", "count/pods", "3",
				"services.nodeports", "1", "configmaps", "1")},
		},
		{
			// count/widgets.example.com: no cache of widgets (no CRD
			// followed): nothing counts it, and it keeps its value, as
			// upstream. TestRuntimeResourceReconcile counts it.
			name:  "usage went down, a name with no cache keeps its value",
			quota: newQuota(hard, rl("pods", "5", "requests.cpu", "1", "count/pods", "6", "services.nodeports", "1", "configmaps", "3", "count/widgets.example.com", "2")),
			want: &corev1.ResourceQuotaStatus{Hard: hard, Used: rl("pods", "2", "requests.cpu", "300m", "count/pods", "3",
				"services.nodeports", "1", "configmaps", "1", "count/widgets.example.com", "2")},
		},
		{
			name: "claims",
			quota: newQuota(rl("persistentvolumeclaims", "5", "requests.storage", "10Gi", "count/persistentvolumeclaims", "5",
				"gold.storageclass.storage.k8s.io/requests.storage", "5Gi", "gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1"), nil),
			want: &corev1.ResourceQuotaStatus{
				Hard: rl("persistentvolumeclaims", "5", "requests.storage", "10Gi", "count/persistentvolumeclaims", "5",
					"gold.storageclass.storage.k8s.io/requests.storage", "5Gi", "gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1"),
				Used: rl("persistentvolumeclaims", "2", "requests.storage", "3Gi", "count/persistentvolumeclaims", "2",
					"gold.storageclass.storage.k8s.io/requests.storage", "1Gi", "gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1"),
			},
		},
		{
			name: "hard changed, a dropped name leaves used",
			quota: func() *corev1.ResourceQuota {
				q := newQuota(rl("pods", "2"), rl("pods", "2", "configmaps", "1"))
				q.Status.Hard = rl("pods", "2", "configmaps", "5")
				return q
			}(),
			want: &corev1.ResourceQuotaStatus{Hard: rl("pods", "2"), Used: rl("pods", "2")},
		},
		{
			name:  "up to date",
			quota: newQuota(rl("pods", "10", "configmaps", "5"), rl("pods", "2", "configmaps", "1")),
		},
		{
			name: "scoped",
			quota: func() *corev1.ResourceQuota {
				q := newQuota(rl("pods", "10"), nil)
				q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
				return q
			}(),
			want: &corev1.ResourceQuotaStatus{Hard: rl("pods", "10"), Used: rl("pods", "0")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tt.quota)
			f.reconcile(t)
			writes := f.statusWrites()
			if tt.want == nil {
				if len(writes) != 0 {
					t.Fatalf("wrote %v, want no write", writes)
				}
				return
			}
			if len(writes) != 1 {
				t.Fatalf("wrote %d statuses, want 1", len(writes))
			}
			if !apiequality.Semantic.DeepEqual(writes[0], *tt.want) {
				t.Errorf("status = %v, want %v", writes[0], *tt.want)
			}
		})
	}
}

func TestReconcileMissingQuota(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newQuota(rl("pods", "1"), nil))
	f.quotas.remove(newQuota(nil, nil))
	f.reconcile(t)
	if w := f.statusWrites(); len(w) != 0 {
		t.Errorf("wrote %v for a deleted quota", w)
	}
}

func TestReplenishment(t *testing.T) {
	t.Parallel()
	synced := newQuota(rl("pods", "10", "configmaps", "5"), rl("pods", "2", "configmaps", "1"))
	tests := []struct {
		name string
		play func(f *fixture)
		want int // keys queued
	}{
		{"pod finishes", func(f *fixture) { f.pods.set(newPod("ns", "a", "100m", corev1.PodSucceeded)) }, 1},
		{"pod keeps running", func(f *fixture) { f.pods.set(newPod("ns", "a", "500m", corev1.PodRunning)) }, 0},
		{"pod deleted", func(f *fixture) { f.pods.remove(newPod("ns", "b", "200m", corev1.PodPending)) }, 1},
		{"pod of another namespace deleted", func(f *fixture) { f.pods.remove(newPod("other", "c", "1", corev1.PodRunning)) }, 0},
		{"configmap deleted", func(f *fixture) { f.cms.remove(newMeta("ns", "cm1")) }, 1},
		{"configmap added", func(f *fixture) { f.cms.set(newMeta("ns", "cm3")) }, 0},
		{"claim deleted, quota does not limit claims", func(f *fixture) { f.claims.remove(newClaim("ns", "data", "gold", "1Gi", "")) }, 0},
		{"service deleted, quota does not limit services", func(f *fixture) {
			f.services.remove(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}})
		}, 0},
		{"quota spec changed", func(f *fixture) {
			q := synced.DeepCopy()
			q.Spec.Hard = rl("pods", "20")
			f.quotas.set(q)
		}, 1},
		{"quota status written", func(f *fixture) {
			q := synced.DeepCopy()
			q.Status.Used = rl("pods", "3", "configmaps", "1")
			f.quotas.set(q)
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, synced.DeepCopy())
			tt.play(f)
			if got := f.c.ctrl.Len(); got != tt.want {
				t.Errorf("queued %d keys, want %d", got, tt.want)
			}
		})
	}
}

// TestRun: a running controller syncs every quota without any event.
func TestRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, newQuota(rl("pods", "10"), nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for len(f.statusWrites()) == 0 {
		select {
		case <-deadline:
			t.Fatal("no status written within 10s")
		case <-tick.C:
		}
	}
	if got := f.statusWrites()[0].Used; !apiequality.Semantic.DeepEqual(got, rl("pods", "2")) {
		t.Errorf("used = %v, want pods=2", got)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{}); err == nil {
		t.Error("New without a client: want an error")
	}
	f := newFixture(t, newQuota(nil, nil))
	_, err := New(Config{Client: f.client, Quotas: f.quotas, Pods: f.pods, Services: f.services,
		Objects: map[schema.GroupResource]Source[*metav1.PartialObjectMetadata]{{Resource: "pods"}: f.cms}})
	if err == nil {
		t.Error("pods among Objects: want an error")
	}
	_, err = New(Config{Client: f.client, Quotas: f.quotas, Pods: f.pods, Services: f.services, Claims: f.claims,
		Objects: map[schema.GroupResource]Source[*metav1.PartialObjectMetadata]{{Resource: "persistentvolumeclaims"}: f.cms}})
	if err == nil {
		t.Error("persistentvolumeclaims among Objects: want an error")
	}
	if _, err := New(Config{Client: f.client, Quotas: f.quotas, Pods: f.pods, Services: f.services}); err == nil {
		t.Error("New without Claims: want an error")
	}
}

// TestClaimReplenishment: the quotas that limit claims are recomputed when
// a claim is deleted or what it is charged changes, not on other updates.
func TestClaimReplenishment(t *testing.T) {
	t.Parallel()
	synced := newQuota(rl("requests.storage", "10Gi"), rl("requests.storage", "3Gi"))
	tests := []struct {
		name string
		play func(f *fixture)
		want int // keys queued
	}{
		{"claim deleted", func(f *fixture) { f.claims.remove(newClaim("ns", "data", "gold", "1Gi", "")) }, 1},
		{"claim of another namespace deleted", func(f *fixture) { f.claims.remove(newClaim("other", "x", "gold", "10Gi", "")) }, 0},
		{"allocated size recovered down", func(f *fixture) { f.claims.set(newClaim("ns", "logs", "", "500Mi", "")) }, 1},
		{"label added", func(f *fixture) {
			pvc := newClaim("ns", "data", "gold", "1Gi", "")
			pvc.Labels = map[string]string{"a": "b"}
			f.claims.set(pvc)
		}, 0},
		{"claim added", func(f *fixture) { f.claims.set(newClaim("ns", "new", "", "1Gi", "")) }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, synced.DeepCopy())
			tt.play(f)
			if got := f.c.ctrl.Len(); got != tt.want {
				t.Errorf("queued %d keys, want %d", got, tt.want)
			}
		})
	}
}

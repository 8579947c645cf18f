package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// rqStore is an in-memory QuotaStore whose status writes compare and swap
// on resourceVersion, as the API server's do.
type rqStore struct {
	mu      sync.Mutex
	quotas  map[string]*corev1.ResourceQuota
	rv      int
	writes  int
	listErr error
	// race, when set, runs inside UpdateQuotaStatus before the swap (a
	// writer that got there first).
	race func(s *rqStore)
}

func newRQStore(quotas ...*corev1.ResourceQuota) *rqStore {
	s := &rqStore{quotas: map[string]*corev1.ResourceQuota{}}
	for _, q := range quotas {
		s.put(q)
	}
	return s
}

// put stores q with a new resourceVersion (the caller holds no lock).
func (s *rqStore) put(q *corev1.ResourceQuota) {
	s.rv++
	q = q.DeepCopy()
	q.ResourceVersion = strconv.Itoa(s.rv)
	s.quotas[q.Name] = q
}

func (s *rqStore) get(name string) *corev1.ResourceQuota {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.quotas[name].DeepCopy()
}

func (s *rqStore) ListQuotas(_ context.Context, ns string) ([]*corev1.ResourceQuota, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listErr != nil {
		return nil, s.listErr
	}
	var out []*corev1.ResourceQuota
	for _, q := range s.quotas {
		if q.Namespace == ns {
			out = append(out, q.DeepCopy())
		}
	}
	slices.SortFunc(out, func(a, b *corev1.ResourceQuota) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (s *rqStore) UpdateQuotaStatus(_ context.Context, q *corev1.ResourceQuota) (*corev1.ResourceQuota, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if race := s.race; race != nil {
		s.race = nil
		race(s)
	}
	cur, ok := s.quotas[q.Name]
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("resourcequotas"), q.Name)
	}
	if cur.ResourceVersion != q.ResourceVersion {
		return nil, apierrors.NewConflict(corev1.Resource("resourcequotas"), q.Name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	next := cur.DeepCopy()
	next.Status = q.Status
	s.put(next)
	s.writes++
	return s.quotas[q.Name].DeepCopy(), nil
}

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// rqQuota is a quota whose controller has synced: status.hard = hard.
func rqQuota(name string, hard, used corev1.ResourceList, mut ...func(*corev1.ResourceQuota)) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
	for _, m := range mut {
		m(q)
	}
	return q
}

func rqPod(name string, requests corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: requests}}}}}
}

func rqRequest(op auth.Operation, resource, name string, obj, old runtime.Object) *auth.AdmissionRequest {
	return &auth.AdmissionRequest{Operation: op, Object: obj, OldObject: old,
		Attributes: auth.Attributes{Verb: strings.ToLower(string(op)), Resource: resource, Namespace: "ns", Name: name, ResourceRequest: true}}
}

func rqService(typ corev1.ServiceType, rv string, ports int) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: rv}, Spec: corev1.ServiceSpec{Type: typ}}
	for i := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Port: int32(80 + i)})
	}
	return svc
}

func TestResourceQuotaAdmit(t *testing.T) {
	t.Parallel()
	deadline := int64(30)
	tests := []struct {
		name     string
		quotas   []*corev1.ResourceQuota
		req      *auth.AdmissionRequest
		wantErr  string
		wantUsed map[string]corev1.ResourceList // status.used after, by quota
	}{
		{
			name:     "charges a pod",
			quotas:   []*corev1.ResourceQuota{rqQuota("q", rl("pods", "3", "requests.cpu", "1"), rl("pods", "1", "requests.cpu", "100m"))},
			req:      rqRequest(auth.Create, "pods", "p", rqPod("p", rl("cpu", "200m")), nil),
			wantUsed: map[string]corev1.ResourceList{"q": rl("pods", "2", "requests.cpu", "300m")},
		},
		{
			name:    "exceeded",
			quotas:  []*corev1.ResourceQuota{rqQuota("q", rl("pods", "3"), rl("pods", "3"))},
			req:     rqRequest(auth.Create, "pods", "p", rqPod("p", nil), nil),
			wantErr: `pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: pods=3, limited: pods=3`,
		},
		{
			name:    "exceeded names only what is exceeded",
			quotas:  []*corev1.ResourceQuota{rqQuota("compute", rl("pods", "10", "requests.cpu", "1", "requests.memory", "1Gi"), rl("pods", "1", "requests.cpu", "900m", "requests.memory", "0"))},
			req:     rqRequest(auth.Create, "pods", "p", rqPod("p", rl("cpu", "200m", "memory", "1Mi")), nil),
			wantErr: `pods "p" is forbidden: exceeded quota: compute, requested: requests.cpu=200m, used: requests.cpu=900m, limited: requests.cpu=1`,
		},
		{
			name:    "status unknown",
			quotas:  []*corev1.ResourceQuota{rqQuota("q", rl("pods", "3", "count/pods", "5"), rl("pods", "0"))},
			req:     rqRequest(auth.Create, "pods", "p", rqPod("p", nil), nil),
			wantErr: `pods "p" is forbidden: status unknown for quota: q, resources: count/pods,pods`,
		},
		{
			name:    "cpu quota needs requests",
			quotas:  []*corev1.ResourceQuota{rqQuota("q", rl("requests.cpu", "1"), rl("requests.cpu", "0"))},
			req:     rqRequest(auth.Create, "pods", "", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}}, nil),
			wantErr: `pods "web-" is forbidden: failed quota: q: must specify requests.cpu for: a`,
		},
		{
			name: "a quota the controller has not synced does not apply",
			quotas: []*corev1.ResourceQuota{rqQuota("q", rl("pods", "0"), nil, func(q *corev1.ResourceQuota) {
				q.Status = corev1.ResourceQuotaStatus{}
			})},
			req: rqRequest(auth.Create, "pods", "p", rqPod("p", nil), nil),
		},
		{
			name: "out of scope",
			quotas: []*corev1.ResourceQuota{rqQuota("q", rl("pods", "0"), rl("pods", "0"), func(q *corev1.ResourceQuota) {
				q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}
			})},
			req: rqRequest(auth.Create, "pods", "p", rqPod("p", nil), nil),
		},
		{
			name: "in scope",
			quotas: []*corev1.ResourceQuota{rqQuota("q", rl("pods", "1"), rl("pods", "1"), func(q *corev1.ResourceQuota) {
				q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}
			})},
			req: rqRequest(auth.Create, "pods", "p", func() *corev1.Pod {
				p := rqPod("p", nil)
				p.Spec.ActiveDeadlineSeconds = &deadline
				return p
			}(), nil),
			wantErr: `pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1`,
		},
		{
			name: "charges every matching quota",
			quotas: []*corev1.ResourceQuota{
				rqQuota("a", rl("count/configmaps", "5"), rl("count/configmaps", "1")),
				rqQuota("b", rl("configmaps", "2"), rl("configmaps", "0")),
				rqQuota("c", rl("pods", "2"), rl("pods", "0")),
			},
			req: rqRequest(auth.Create, "configmaps", "cm", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, nil),
			wantUsed: map[string]corev1.ResourceList{
				"a": rl("count/configmaps", "2"), "b": rl("configmaps", "1"), "c": rl("pods", "0"),
			},
		},
		{
			name:     "generic count of a group resource",
			quotas:   []*corev1.ResourceQuota{rqQuota("q", rl("count/deployments.apps", "2"), rl("count/deployments.apps", "1"))},
			req:      &auth.AdmissionRequest{Operation: auth.Create, Object: &metav1.PartialObjectMetadata{}, Attributes: auth.Attributes{APIGroup: "apps", Resource: "deployments", Namespace: "ns", Name: "d"}},
			wantUsed: map[string]corev1.ResourceList{"q": rl("count/deployments.apps", "2")},
		},
		{
			name:    "service turning NodePort is charged its node ports",
			quotas:  []*corev1.ResourceQuota{rqQuota("q", rl("services", "5", "services.nodeports", "1"), rl("services", "1", "services.nodeports", "0"))},
			req:     rqRequest(auth.Update, "services", "web", rqService(corev1.ServiceTypeNodePort, "7", 2), rqService(corev1.ServiceTypeClusterIP, "7", 2)),
			wantErr: `services "web" is forbidden: exceeded quota: q, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1`,
		},
		{
			name:     "service update that uses nothing more",
			quotas:   []*corev1.ResourceQuota{rqQuota("q", rl("services", "1"), rl("services", "1"))},
			req:      rqRequest(auth.Update, "services", "web", rqService(corev1.ServiceTypeClusterIP, "7", 3), rqService(corev1.ServiceTypeClusterIP, "7", 1)),
			wantUsed: map[string]corev1.ResourceList{"q": rl("services", "1")},
		},
		{
			name:   "pod updates are not charged",
			quotas: []*corev1.ResourceQuota{rqQuota("q", rl("pods", "0"), rl("pods", "0"))},
			req:    rqRequest(auth.Update, "pods", "p", rqPod("p", nil), rqPod("p", nil)),
		},
		{
			name:   "events are ignored",
			quotas: []*corev1.ResourceQuota{rqQuota("q", rl("count/events", "0"), rl("count/events", "0"))},
			req:    rqRequest(auth.Create, "events", "e", &corev1.Event{}, nil),
		},
		{
			name:   "subresources are ignored",
			quotas: []*corev1.ResourceQuota{rqQuota("q", rl("pods", "0"), rl("pods", "0"))},
			req: func() *auth.AdmissionRequest {
				r := rqRequest(auth.Create, "pods", "p", rqPod("p", nil), nil)
				r.Subresource = "binding"
				return r
			}(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := newRQStore(tt.quotas...)
			err := NewResourceQuota(QuotaConfig{Quotas: store}).Admit(context.Background(), tt.req)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Admit = %v, want %q", err, tt.wantErr)
				}
				if !apierrors.IsForbidden(err) {
					t.Errorf("Admit = %v, want a 403", err)
				}
				if store.writes != 0 {
					t.Errorf("a refused object wrote %d statuses", store.writes)
				}
				return
			}
			if err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if tt.wantUsed == nil && store.writes != 0 {
				t.Errorf("wrote %d statuses, want none", store.writes)
			}
			for name, want := range tt.wantUsed {
				if got := store.get(name).Status.Used; !apiequality.Semantic.DeepEqual(got, want) {
					t.Errorf("quota %s used = %v, want %v", name, got, want)
				}
			}
		})
	}
}

func TestResourceQuotaFourthPodRefused(t *testing.T) {
	t.Parallel()
	store := newRQStore(rqQuota("pods", rl("pods", "3"), rl("pods", "0")))
	rq := NewResourceQuota(QuotaConfig{Quotas: store})
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("p%d", i)
		if err := rq.Admit(context.Background(), rqRequest(auth.Create, "pods", name, rqPod(name, nil), nil)); err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
	}
	err := rq.Admit(context.Background(), rqRequest(auth.Create, "pods", "p4", rqPod("p4", nil), nil))
	want := `pods "p4" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=3, limited: pods=3`
	if err == nil || err.Error() != want {
		t.Fatalf("4th pod: %v, want %q", err, want)
	}
	if used := store.get("pods").Status.Used[corev1.ResourcePods]; used.Value() != 3 {
		t.Errorf("used pods = %s, want 3", used.String())
	}
}

func TestResourceQuotaDryRunDoesNotCharge(t *testing.T) {
	t.Parallel()
	store := newRQStore(rqQuota("q", rl("pods", "1"), rl("pods", "0")))
	req := rqRequest(auth.Create, "pods", "p", rqPod("p", nil), nil)
	req.DryRun = true
	if err := NewResourceQuota(QuotaConfig{Quotas: store}).Admit(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if store.writes != 0 {
		t.Errorf("a dry run wrote %d statuses", store.writes)
	}
	store.put(rqQuota("q", rl("pods", "1"), rl("pods", "1")))
	if err := NewResourceQuota(QuotaConfig{Quotas: store}).Admit(context.Background(), req); !apierrors.IsForbidden(err) {
		t.Errorf("a dry run over quota: %v, want a 403", err)
	}
}

// TestResourceQuotaRechecksAfterConflict: another writer raised usage
// between the read and the write; the charge is evaluated again against
// the new status and refused.
func TestResourceQuotaRechecksAfterConflict(t *testing.T) {
	t.Parallel()
	store := newRQStore(rqQuota("q", rl("pods", "2"), rl("pods", "1")))
	store.race = func(s *rqStore) { s.put(rqQuota("q", rl("pods", "2"), rl("pods", "2"))) }
	err := NewResourceQuota(QuotaConfig{Quotas: store}).Admit(context.Background(), rqRequest(auth.Create, "pods", "p", rqPod("p", nil), nil))
	want := `pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`
	if err == nil || err.Error() != want {
		t.Fatalf("Admit = %v, want %q", err, want)
	}
}

func TestResourceQuotaConflictThenSuccess(t *testing.T) {
	t.Parallel()
	store := newRQStore(rqQuota("q", rl("pods", "5"), rl("pods", "1")))
	store.race = func(s *rqStore) { s.put(rqQuota("q", rl("pods", "5"), rl("pods", "3"))) }
	if err := NewResourceQuota(QuotaConfig{Quotas: store}).Admit(context.Background(), rqRequest(auth.Create, "pods", "p", rqPod("p", nil), nil)); err != nil {
		t.Fatal(err)
	}
	if used := store.get("q").Status.Used[corev1.ResourcePods]; used.Value() != 4 {
		t.Errorf("used pods = %s, want 4 (3 from the racing writer + 1)", used.String())
	}
}

func TestResourceQuotaListError(t *testing.T) {
	t.Parallel()
	store := newRQStore()
	store.listErr = errors.New("etcd down")
	err := NewResourceQuota(QuotaConfig{Quotas: store}).Admit(context.Background(), rqRequest(auth.Create, "pods", "p", rqPod("p", nil), nil))
	if !apierrors.IsInternalError(err) {
		t.Errorf("Admit = %v, want a 500", err)
	}
}

// TestResourceQuotaConcurrentCreates: many creates at once, through one
// admitter and through two (two API servers sharing the store), never
// take more slots than the quota has.
func TestResourceQuotaConcurrentCreates(t *testing.T) {
	t.Parallel()
	for _, servers := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d servers", servers), func(t *testing.T) {
			t.Parallel()
			store := newRQStore(rqQuota("q", rl("pods", "3"), rl("pods", "0")))
			admitters := make([]auth.Admitter, servers)
			for i := range admitters {
				admitters[i] = NewResourceQuota(QuotaConfig{Quotas: store, Now: func() time.Time { return time.Unix(0, 0) }})
			}
			const creates = 20
			errs := make([]error, creates)
			var wg sync.WaitGroup
			for i := range creates {
				wg.Add(1)
				go func() {
					defer wg.Done()
					name := fmt.Sprintf("p%d", i)
					errs[i] = admitters[i%servers].Admit(context.Background(), rqRequest(auth.Create, "pods", name, rqPod(name, nil), nil))
				}()
			}
			wg.Wait()
			admitted := 0
			for _, err := range errs {
				switch {
				case err == nil:
					admitted++
				case apierrors.IsForbidden(err) || apierrors.IsConflict(err):
				default:
					t.Errorf("unexpected error: %v", err)
				}
			}
			used := store.get("q").Status.Used[corev1.ResourcePods]
			if admitted > 3 || used.Value() != int64(admitted) {
				t.Errorf("admitted %d pods, used %s; want at most 3 and used = admitted", admitted, used.String())
			}
			if servers == 1 && admitted != 3 {
				t.Errorf("one server admitted %d pods, want exactly 3", admitted)
			}
		})
	}
}

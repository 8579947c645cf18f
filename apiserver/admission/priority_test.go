package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/auth"
	"github.com/kubebus/kubebus/apiserver/storage"
)

// fakeClasses is an in-memory PriorityClasses.
type fakeClasses struct {
	classes []*schedulingv1.PriorityClass
	err     error
}

func (f fakeClasses) Get(_ context.Context, name string) (*schedulingv1.PriorityClass, error) {
	if f.err != nil {
		return nil, f.err
	}
	for _, pc := range f.classes {
		if pc.Name == name {
			return pc.DeepCopy(), nil
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrNoPriorityClass, name)
}

func (f fakeClasses) List(context.Context) ([]*schedulingv1.PriorityClass, error) {
	if f.err != nil {
		return nil, f.err
	}
	out := make([]*schedulingv1.PriorityClass, len(f.classes))
	for i, pc := range f.classes {
		out[i] = pc.DeepCopy()
	}
	return out, nil
}

func class(name string, value int32, globalDefault bool, policy corev1.PreemptionPolicy) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: globalDefault, PreemptionPolicy: &policy}
}

func p32(v int32) *int32 { return &v }

func policyPtr(p corev1.PreemptionPolicy) *corev1.PreemptionPolicy { return &p }

func priorityPodCreate(className string, priority *int32, policy *corev1.PreemptionPolicy) *auth.AdmissionRequest {
	r := podCreate()
	pod := r.Object.(*corev1.Pod)
	pod.Spec.PriorityClassName, pod.Spec.Priority, pod.Spec.PreemptionPolicy = className, priority, policy
	return r
}

func TestPriorityPodCreate(t *testing.T) {
	t.Parallel()
	high := class("high", 1000, false, corev1.PreemptLowerPriority)
	never := class("never", 500, false, corev1.PreemptNever)
	def := class("default-low", 10, true, corev1.PreemptLowerPriority)
	defNever := class("default-never", 7, true, corev1.PreemptNever)
	tests := []struct {
		name         string
		classes      fakeClasses
		req          *auth.AdmissionRequest
		wantClass    string
		wantPriority int32
		wantPolicy   corev1.PreemptionPolicy
		wantErr      string // substring of a 403's message
		wantInternal bool
	}{
		{name: "no class, no default: 0", classes: fakeClasses{classes: []*schedulingv1.PriorityClass{high}},
			req: priorityPodCreate("", nil, nil), wantPriority: 0, wantPolicy: corev1.PreemptLowerPriority},
		{name: "no class: the global default", classes: fakeClasses{classes: []*schedulingv1.PriorityClass{high, def}},
			req: priorityPodCreate("", nil, nil), wantClass: "default-low", wantPriority: 10, wantPolicy: corev1.PreemptLowerPriority},
		{name: "two defaults: the lowest wins", classes: fakeClasses{classes: []*schedulingv1.PriorityClass{def, defNever}},
			req: priorityPodCreate("", nil, nil), wantClass: "default-never", wantPriority: 7, wantPolicy: corev1.PreemptNever},
		{name: "named class", classes: fakeClasses{classes: []*schedulingv1.PriorityClass{high, def}},
			req: priorityPodCreate("high", nil, nil), wantClass: "high", wantPriority: 1000, wantPolicy: corev1.PreemptLowerPriority},
		{name: "named class with Never", classes: fakeClasses{classes: []*schedulingv1.PriorityClass{never}},
			req: priorityPodCreate("never", nil, nil), wantClass: "never", wantPriority: 500, wantPolicy: corev1.PreemptNever},
		{name: "same priority given is fine", classes: fakeClasses{classes: []*schedulingv1.PriorityClass{high}},
			req: priorityPodCreate("high", p32(1000), policyPtr(corev1.PreemptLowerPriority)), wantClass: "high", wantPriority: 1000, wantPolicy: corev1.PreemptLowerPriority},
		{name: "explicit 0 without classes is fine", req: priorityPodCreate("", p32(0), nil), wantPriority: 0, wantPolicy: corev1.PreemptLowerPriority},
		{name: "system-node-critical from its object", classes: fakeClasses{classes: []*schedulingv1.PriorityClass{class(SystemNodeCritical, 2000001000, false, corev1.PreemptLowerPriority)}},
			req: priorityPodCreate(SystemNodeCritical, nil, nil), wantClass: SystemNodeCritical, wantPriority: 2000001000, wantPolicy: corev1.PreemptLowerPriority},
		{name: "system-cluster-critical without its object", req: priorityPodCreate(SystemClusterCritical, nil, nil),
			wantClass: SystemClusterCritical, wantPriority: 2000000000, wantPolicy: corev1.PreemptLowerPriority},
		{name: "defaulted system priority agrees", req: priorityPodCreate(SystemNodeCritical, p32(2000001000), policyPtr(corev1.PreemptLowerPriority)),
			wantClass: SystemNodeCritical, wantPriority: 2000001000, wantPolicy: corev1.PreemptLowerPriority},
		{name: "missing class", classes: fakeClasses{classes: []*schedulingv1.PriorityClass{high}},
			req: priorityPodCreate("nope", nil, nil), wantErr: "no PriorityClass with name nope was found"},
		{name: "priority differs from the class", classes: fakeClasses{classes: []*schedulingv1.PriorityClass{high}},
			req:     priorityPodCreate("high", p32(5), nil),
			wantErr: "the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name"},
		{name: "priority differs from the global default", classes: fakeClasses{classes: []*schedulingv1.PriorityClass{def}},
			req:     priorityPodCreate("", p32(0), nil),
			wantErr: "the integer value of priority (0) must not be provided in pod spec; priority admission controller computed 10 from the given PriorityClass name"},
		{name: "priority without a class and no default", req: priorityPodCreate("", p32(3), nil),
			wantErr: "the integer value of priority (3) must not be provided in pod spec; priority admission controller computed 0"},
		{name: "preemption policy differs", classes: fakeClasses{classes: []*schedulingv1.PriorityClass{never}},
			req:     priorityPodCreate("never", nil, policyPtr(corev1.PreemptLowerPriority)),
			wantErr: "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name"},
		{name: "lookup failure is an internal error", classes: fakeClasses{err: errors.New("etcd down")},
			req: priorityPodCreate("high", nil, nil), wantInternal: true},
		{name: "default lookup failure is an internal error", classes: fakeClasses{err: errors.New("etcd down")},
			req: priorityPodCreate("", nil, nil), wantInternal: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Priority{Classes: tc.classes}.Admit(context.Background(), tc.req)
			switch {
			case tc.wantInternal:
				if !apierrors.IsInternalError(err) {
					t.Fatalf("err = %v, want an internal error", err)
				}
				return
			case tc.wantErr != "":
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want 403 containing %q", err, tc.wantErr)
				}
				return
			case err != nil:
				t.Fatalf("Admit: %v", err)
			}
			spec := tc.req.Object.(*corev1.Pod).Spec
			if spec.PriorityClassName != tc.wantClass {
				t.Errorf("priorityClassName = %q, want %q", spec.PriorityClassName, tc.wantClass)
			}
			if spec.Priority == nil || *spec.Priority != tc.wantPriority {
				t.Errorf("priority = %v, want %d", spec.Priority, tc.wantPriority)
			}
			if spec.PreemptionPolicy == nil || *spec.PreemptionPolicy != tc.wantPolicy {
				t.Errorf("preemptionPolicy = %v, want %s", spec.PreemptionPolicy, tc.wantPolicy)
			}
		})
	}
}

func TestPriorityForbiddenNamesThePod(t *testing.T) {
	t.Parallel()
	err := Priority{Classes: fakeClasses{}}.Admit(context.Background(), priorityPodCreate("nope", nil, nil))
	want := `pods "p" is forbidden: no PriorityClass with name nope was found`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

func TestPriorityLeavesOthersAlone(t *testing.T) {
	t.Parallel()
	// Every case would be rejected if the plugin looked: the class is missing.
	tests := map[string]*auth.AdmissionRequest{
		"subresource": func() *auth.AdmissionRequest {
			r := priorityPodCreate("nope", nil, nil)
			r.Subresource = "status"
			return r
		}(),
		"other group": func() *auth.AdmissionRequest {
			r := priorityPodCreate("nope", nil, nil)
			r.Attributes.APIGroup = "example.com"
			return r
		}(),
		"other resource": func() *auth.AdmissionRequest {
			r := priorityPodCreate("nope", nil, nil)
			r.Attributes.Resource = "podtemplates"
			return r
		}(),
		"not a pod": {Operation: auth.Create, Attributes: auth.Attributes{Resource: "pods"}, Object: &corev1.Service{}},
		"delete":    {Operation: auth.Delete, Attributes: auth.Attributes{Resource: "pods", Name: "p"}, OldObject: &corev1.Pod{}},
	}
	for name, req := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if err := (Priority{Classes: fakeClasses{}}).Admit(context.Background(), req); err != nil {
				t.Fatalf("Admit: %v", err)
			}
		})
	}
}

func TestPriorityPodUpdateCarriesOver(t *testing.T) {
	t.Parallel()
	old := &corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "high", Priority: p32(1000), PreemptionPolicy: policyPtr(corev1.PreemptNever)}}
	tests := []struct {
		name       string
		priority   *int32
		policy     *corev1.PreemptionPolicy
		wantPrio   int32
		wantPolicy corev1.PreemptionPolicy
	}{
		{name: "left out", wantPrio: 1000, wantPolicy: corev1.PreemptNever},
		// A change is validation's to refuse; admission does not hide it.
		{name: "changed is kept", priority: p32(7), policy: policyPtr(corev1.PreemptLowerPriority), wantPrio: 7, wantPolicy: corev1.PreemptLowerPriority},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pod := &corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "high", Priority: tc.priority, PreemptionPolicy: tc.policy}}
			req := &auth.AdmissionRequest{Operation: auth.Update, Attributes: auth.Attributes{Resource: "pods", Name: "p", Namespace: "default"},
				Object: pod, OldObject: old}
			// No classes at all: an update never looks one up.
			if err := (Priority{Classes: fakeClasses{err: errors.New("must not be called")}}).Admit(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if *pod.Spec.Priority != tc.wantPrio || *pod.Spec.PreemptionPolicy != tc.wantPolicy {
				t.Errorf("priority %d policy %s, want %d %s", *pod.Spec.Priority, *pod.Spec.PreemptionPolicy, tc.wantPrio, tc.wantPolicy)
			}
		})
	}
}

func TestPriorityClassWrites(t *testing.T) {
	t.Parallel()
	def := class("default-low", 10, true, corev1.PreemptLowerPriority)
	classReq := func(op auth.Operation, pc *schedulingv1.PriorityClass) *auth.AdmissionRequest {
		return &auth.AdmissionRequest{Operation: op, Attributes: auth.Attributes{APIGroup: "scheduling.k8s.io", Resource: "priorityclasses", Name: pc.Name}, Object: pc}
	}
	deleteReq := func(name string) *auth.AdmissionRequest {
		return &auth.AdmissionRequest{Operation: auth.Delete, Attributes: auth.Attributes{APIGroup: "scheduling.k8s.io", Resource: "priorityclasses", Name: name},
			OldObject: class(name, 1, false, corev1.PreemptLowerPriority)}
	}
	tests := []struct {
		name    string
		classes fakeClasses
		req     *auth.AdmissionRequest
		wantErr string
	}{
		{name: "first default", req: classReq(auth.Create, class("d", 1, true, corev1.PreemptLowerPriority))},
		{name: "second default", classes: fakeClasses{classes: []*schedulingv1.PriorityClass{def}},
			req: classReq(auth.Create, class("d", 1, true, corev1.PreemptLowerPriority)), wantErr: "PriorityClass default-low is already marked as default. Only one default can exist"},
		{name: "non-default beside a default", classes: fakeClasses{classes: []*schedulingv1.PriorityClass{def}},
			req: classReq(auth.Create, class("d", 1, false, corev1.PreemptLowerPriority))},
		{name: "update of the default itself", classes: fakeClasses{classes: []*schedulingv1.PriorityClass{def}},
			req: classReq(auth.Update, class("default-low", 10, true, corev1.PreemptLowerPriority))},
		{name: "marking another as default", classes: fakeClasses{classes: []*schedulingv1.PriorityClass{def}},
			req: classReq(auth.Update, class("other", 10, true, corev1.PreemptLowerPriority)), wantErr: "already marked as default"},
		{name: "delete a user class", req: deleteReq("batch")},
		{name: "delete system-node-critical", req: deleteReq(SystemNodeCritical), wantErr: "this is a system priority class and cannot be deleted"},
		{name: "delete system-cluster-critical", req: deleteReq(SystemClusterCritical), wantErr: "this is a system priority class and cannot be deleted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Priority{Classes: tc.classes}.Admit(context.Background(), tc.req)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Admit: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want 403 containing %q", err, tc.wantErr)
			}
		})
	}
}

// fakeKV is a KVReader over a map.
type fakeKV map[string]string

func (f fakeKV) Get(_ context.Context, key string) (storage.KV, error) {
	v, ok := f[key]
	if !ok {
		return storage.KV{}, storage.ErrNotFound
	}
	return storage.KV{Key: key, Value: []byte(v)}, nil
}

func (f fakeKV) List(_ context.Context, prefix, _ string, _, _ int64) (storage.Page, error) {
	var p storage.Page
	for k, v := range f {
		if strings.HasPrefix(k, prefix) {
			p.KVs = append(p.KVs, storage.KV{Key: k, Value: []byte(v)})
		}
	}
	return p, nil
}

func TestStoredPriorityClasses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := &StoredPriorityClasses{Store: fakeKV{
		"/registry/scheduling.k8s.io/priorityclasses/high": `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"high"},"value":1000,"preemptionPolicy":"Never"}`,
		"/registry/scheduling.k8s.io/priorityclasses/dflt": `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"dflt"},"value":5,"globalDefault":true}`,
		"/registry/core/pods/default/high":                 `{"kind":"Pod"}`,
	}}
	pc, err := s.Get(ctx, "high")
	if err != nil {
		t.Fatal(err)
	}
	if pc.Value != 1000 || pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != corev1.PreemptNever {
		t.Errorf("high = %+v", pc)
	}
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, ErrNoPriorityClass) {
		t.Errorf("Get(nope) err = %v, want ErrNoPriorityClass", err)
	}
	list, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Errorf("List returned %d classes, want 2", len(list))
	}
	bad := &StoredPriorityClasses{Store: fakeKV{"/registry/scheduling.k8s.io/priorityclasses/bad": `{"value":"x"}`}}
	if _, err := bad.Get(ctx, "bad"); err == nil || !strings.Contains(err.Error(), "decoding stored") {
		t.Errorf("Get(bad) err = %v, want a decoding error", err)
	}
	if _, err := bad.List(ctx); err == nil {
		t.Error("List over a bad value: no error")
	}
}

// localKV is a store that can list without a quorum read; its quorum List
// fails, so a test sees which one was used.
type localKV struct{ fakeKV }

func (l localKV) List(context.Context, string, string, int64, int64) (storage.Page, error) {
	return storage.Page{}, errors.New("quorum list used")
}

func (l localKV) ListSerializable(ctx context.Context, prefix string) (storage.Page, error) {
	return l.fakeKV.List(ctx, prefix, "", 0, 0)
}

func TestStoredPriorityClassesListsFromTheLocalMember(t *testing.T) {
	t.Parallel()
	s := &StoredPriorityClasses{Store: localKV{fakeKV{
		"/registry/scheduling.k8s.io/priorityclasses/dflt": `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"dflt"},"value":5,"globalDefault":true}`,
	}}}
	list, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "dflt" || !list[0].GlobalDefault {
		t.Errorf("List = %+v, want the one default class", list)
	}
}

// revKV is a one-prefix store whose values carry revisions.
type revKV map[string]storage.KV

func (r revKV) Get(_ context.Context, key string) (storage.KV, error) {
	kv, ok := r[key]
	if !ok {
		return storage.KV{}, storage.ErrNotFound
	}
	return kv, nil
}

func (r revKV) List(_ context.Context, prefix, _ string, _, _ int64) (storage.Page, error) {
	var p storage.Page
	for k, kv := range r {
		if strings.HasPrefix(k, prefix) {
			p.KVs = append(p.KVs, kv)
		}
	}
	return p, nil
}

// TestStoredPriorityClassesDecodeEachRevisionOnce: a class read again at
// the same revision is the decoding made before; a new revision is decoded
// anew, so a changed class is seen at once; a deleted class is forgotten.
func TestStoredPriorityClassesDecodeEachRevisionOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const key = "/registry/scheduling.k8s.io/priorityclasses/high"
	store := revKV{key: {Key: key, ModRevision: 7, Value: []byte(`{"metadata":{"name":"high"},"value":1000}`)}}
	s := &StoredPriorityClasses{Store: store}
	first, err := s.Get(ctx, "high")
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Get(ctx, "high")
	if err != nil {
		t.Fatal(err)
	}
	listed, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again != first || len(listed) != 1 || listed[0] != first {
		t.Fatalf("revision 7 was decoded more than once: %p %p %v", first, again, listed)
	}
	store[key] = storage.KV{Key: key, ModRevision: 9, Value: []byte(`{"metadata":{"name":"high"},"value":2000}`)}
	changed, err := s.Get(ctx, "high")
	if err != nil {
		t.Fatal(err)
	}
	if changed == first || changed.Value != 2000 {
		t.Fatalf("after an update Get = %+v, want the new value 2000", changed)
	}
	delete(store, key)
	if _, err := s.List(ctx); err != nil {
		t.Fatal(err)
	}
	if len(s.decoded) != 0 {
		t.Errorf("a deleted class is still remembered: %v", s.decoded)
	}
}

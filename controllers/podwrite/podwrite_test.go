package podwrite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

var (
	owner      = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owner"}}
	errBoom    = errors.New("boom")
	timeout    = apierrors.NewTimeoutError("slow", 1)
	notFound   = apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")
	conflict   = apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("uid precondition"))
	errIgnored = errors.New("ignored")
)

// drain returns the recorded events, sorted (parallel writes record them
// in any order).
func drain(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			sort.Strings(out)
			return out
		}
	}
}

func TestCreatesInBatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		n           int
		fail        map[int]error // by pod index
		wantCreated int
		wantErr     error
		wantCalls   int
		wantEvents  []string
	}{
		{name: "none", n: 0},
		{name: "all", n: 10, wantCreated: 10, wantCalls: 10},
		{name: "a failure stops after its batch", n: 10, fail: map[int]error{1: errBoom},
			wantCreated: 2, wantErr: errBoom, wantCalls: 3, wantEvents: []string{"Warning FailedCreate Error creating: boom"}},
		{name: "a timeout counts as created", n: 3, fail: map[int]error{0: timeout, 2: timeout}, wantCreated: 3, wantCalls: 3},
		{name: "an ignored error is neither", n: 3, fail: map[int]error{1: errIgnored}, wantCreated: 2, wantCalls: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := record.NewFakeRecorder(100)
			var mu sync.Mutex
			var calls []int
			created, err := Creates{
				Create: func(_ context.Context, i int) (*corev1.Pod, error) {
					mu.Lock()
					calls = append(calls, i)
					mu.Unlock()
					if err := tt.fail[i]; err != nil {
						return nil, err
					}
					return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)}}, nil
				},
				Recorder: rec,
				Object:   owner,
				Ignore:   func(err error) bool { return errors.Is(err, errIgnored) },
			}.InBatches(context.Background(), tt.n)
			if created != tt.wantCreated || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("InBatches = %d, %v; want %d, %v", created, err, tt.wantCreated, tt.wantErr)
			}
			slices.Sort(calls)
			if want := seq(tt.wantCalls); !slices.Equal(calls, want) {
				t.Errorf("created indexes %v, want %v", calls, want)
			}
			var failed []string
			ok := 0
			for _, e := range drain(rec) {
				if strings.HasPrefix(e, "Normal SuccessfulCreate Created pod: ") {
					ok++
				} else {
					failed = append(failed, e)
				}
			}
			timeouts := 0
			for _, err := range tt.fail {
				if apierrors.IsTimeout(err) {
					timeouts++
				}
			}
			if ok != tt.wantCreated-timeouts || !slices.Equal(failed, tt.wantEvents) {
				t.Errorf("events: %d SuccessfulCreate, others %q; want %d, %q", ok, failed, tt.wantCreated-timeouts, tt.wantEvents)
			}
		})
	}
}

// TestCreatesBatchSizes checks the slow start: 1, 2, 4, ... and what remains.
func TestCreatesBatchSizes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int
		want []int // first index of each batch
	}{
		{1, []int{0}},
		{3, []int{0, 1}},
		{10, []int{0, 1, 3, 7}},
		{15, []int{0, 1, 3, 7}},
		{16, []int{0, 1, 3, 7, 15}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n), func(t *testing.T) {
			t.Parallel()
			// A batch starts only when the one before it is done, so the
			// order of the creates shows the batches.
			var mu sync.Mutex
			var calls []int
			_, _ = Creates{
				Create: func(_ context.Context, i int) (*corev1.Pod, error) {
					mu.Lock()
					defer mu.Unlock()
					calls = append(calls, i)
					return &corev1.Pod{}, nil
				},
				Recorder: record.NewFakeRecorder(100),
				Object:   owner,
			}.InBatches(context.Background(), tt.n)
			if len(calls) != tt.n {
				t.Fatalf("%d creates, want %d", len(calls), tt.n)
			}
			for i, start := range tt.want {
				end := tt.n
				if i+1 < len(tt.want) {
					end = tt.want[i+1]
				}
				// Every pod of a batch is created before any of the next.
				for _, c := range calls[start:end] {
					if c < start || c >= end {
						t.Fatalf("create order %v: batch [%d, %d) mixed with others", calls, start, end)
					}
				}
			}
		})
	}
}

func seq(n int) []int {
	out := []int{}
	for i := range n {
		out = append(out, i)
	}
	return out
}

func TestDeletesAll(t *testing.T) {
	t.Parallel()
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid")}}
	}
	tests := []struct {
		name       string
		result     error
		wantGone   bool
		wantUnseen bool
		wantErr    string
		wantEvent  string
	}{
		{"deleted", nil, true, false, "", "Normal SuccessfulDelete Deleted pod: p"},
		{"gone already", notFound, true, true, "", ""},
		{"replaced by a namesake", conflict, true, true, "", ""},
		{"failed", errBoom, false, true, "deleting pod p: boom", "Warning FailedDelete Error deleting: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := record.NewFakeRecorder(10)
			var unseen []string
			gone, err := Deletes{
				Delete: func(_ context.Context, ns, name string, uid types.UID) error {
					if ns != "ns" || name != "p" || uid != "p-uid" {
						t.Errorf("Delete(%s, %s, %s)", ns, name, uid)
					}
					return tt.result
				},
				Recorder: rec,
				Object:   owner,
				Unseen:   func(p *corev1.Pod) { unseen = append(unseen, p.Name) },
			}.All(context.Background(), []*corev1.Pod{pod("p")})
			if gone["p-uid"] != tt.wantGone {
				t.Errorf("gone = %v, want p gone %v", gone, tt.wantGone)
			}
			if (len(unseen) == 1) != tt.wantUnseen {
				t.Errorf("unseen = %v, want %v", unseen, tt.wantUnseen)
			}
			if got := fmt.Sprint(err); (tt.wantErr == "" && err != nil) || (tt.wantErr != "" && got != tt.wantErr) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
			var want []string
			if tt.wantEvent != "" {
				want = []string{tt.wantEvent}
			}
			if got := drain(rec); !slices.Equal(got, want) {
				t.Errorf("events %q, want %q", got, want)
			}
		})
	}
}

func TestClient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cs := fake.NewClientset()
	c := NewClient(cs)
	p, err := c.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "p-uid"}})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := c.Patch(ctx, "ns", "p", []byte(`{"metadata":{"labels":{"a":"b"}}}`)); err != nil {
		t.Fatalf("Patch: %v", err)
	}
	got, err := cs.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
	if err != nil || got.Labels["a"] != "b" {
		t.Fatalf("after Patch: %v, %v", got.Labels, err)
	}
	if err := c.Delete(ctx, "ns", "p", p.UID); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := cs.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after Delete: %v", err)
	}
}

// lossyCreates makes the first create of cs fail with err; when stored is
// set, that create stores the pod first. It returns the count of creates.
func lossyCreates(cs *fake.Clientset, err error, stored bool) *int {
	calls := 0
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		calls++
		if calls > 1 {
			return false, nil, nil
		}
		if stored {
			ca := a.(k8stesting.CreateAction)
			if err := cs.Tracker().Create(corev1.SchemeGroupVersion.WithResource("pods"), ca.GetObject(), ca.GetNamespace()); err != nil {
				panic(err)
			}
		}
		return true, nil, err
	})
	return &calls
}

func TestClientCreateRepeatsALostAnswerUnderTheSameName(t *testing.T) {
	t.Parallel()
	internal := apierrors.NewInternalError(errors.New("etcdserver: request timed out (the write may have been committed)"))
	for _, tc := range []struct {
		name   string
		err    error
		stored bool
	}{
		{"cut, stored", io.ErrUnexpectedEOF, true},
		{"internal error, stored", internal, true},
		{"cut, not stored", io.ErrUnexpectedEOF, false},
		{"internal error, not stored", internal, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cs := fake.NewClientset()
			calls := lossyCreates(cs, tc.err, tc.stored)
			got, err := NewClient(cs).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "web-"}})
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			if *calls != 2 {
				t.Errorf("%d creates sent, want 2", *calls)
			}
			if !strings.HasPrefix(got.Name, "web-") || len(got.Name) != len("web-")+5 || got.GenerateName != "web-" {
				t.Errorf("returned pod named %q (generateName %q), want web- and 5 characters", got.Name, got.GenerateName)
			}
			list, err := cs.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 1 || list.Items[0].Name != got.Name {
				t.Fatalf("stored %d pods (%v), want only %s", len(list.Items), list.Items, got.Name)
			}
		})
	}
}

func TestClientCreateDoesNotRepeatARefusal(t *testing.T) {
	t.Parallel()
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("exceeded quota"))
	cs := fake.NewClientset()
	calls := lossyCreates(cs, forbidden, false)
	if _, err := NewClient(cs).Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "web-"}}); !apierrors.IsForbidden(err) {
		t.Fatalf("Create: %v, want the Forbidden", err)
	}
	if *calls != 1 {
		t.Errorf("%d creates sent, want 1", *calls)
	}
}

func TestClientCreateGivesUpAfterItsAttempts(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset()
	calls := 0
	cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		calls++
		return true, nil, io.ErrUnexpectedEOF
	})
	_, err := NewClient(cs).Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "web-"}})
	if !apierrors.IsTimeout(err) || !strings.Contains(err.Error(), io.ErrUnexpectedEOF.Error()) {
		t.Fatalf("Create: %v, want a Timeout naming the cut", err)
	}
	if calls != createAttempts {
		t.Errorf("%d creates sent, want %d", calls, createAttempts)
	}
}

// A resend refused after a lost answer does not say the first send was
// not stored: the create may still have made a pod.
func TestClientCreateRefusedResendMayStillHaveStored(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset()
	calls := 0
	cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		calls++
		if calls == 1 {
			return true, nil, io.ErrUnexpectedEOF
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("exceeded quota"))
	})
	if _, err := NewClient(cs).Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "web-"}}); !apierrors.IsTimeout(err) {
		t.Fatalf("Create: %v, want a Timeout (the pod may come)", err)
	}
	if calls != 2 {
		t.Errorf("%d creates sent, want 2", calls)
	}
}

// The API server's own timeout is not resent (a resend could wait as
// long again); callers count it as a pod that may come.
func TestClientCreateDoesNotResendATimeout(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset()
	calls := lossyCreates(cs, timeout, true)
	if _, err := NewClient(cs).Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "web-"}}); !apierrors.IsTimeout(err) {
		t.Fatalf("Create: %v, want the Timeout", err)
	}
	if *calls != 1 {
		t.Errorf("%d creates sent, want 1", *calls)
	}
}

// A generated name another object already has is replaced, as the API
// server replaces it.
func TestClientCreatePicksAnotherNameWhenTaken(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset()
	var first string
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).Name
		if first == "" {
			first = name
			return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, name)
		}
		return false, nil, nil
	})
	got, err := NewClient(cs).Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "web-"}})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if got.Name == first || !strings.HasPrefix(got.Name, "web-") {
		t.Errorf("created %q after %q was taken, want another web- name", got.Name, first)
	}
}

func TestClientCreateTakesATakenNameAtFirstAsAConflict(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}})
	if _, err := NewClient(cs).Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("Create: %v, want AlreadyExists", err)
	}
}

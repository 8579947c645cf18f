package shell

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/scheduler/config"
	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
	"github.com/kubebus/kubebus/scheduler/queue"
)

// TestBindFailure: what a failed binding does to the queue and the
// snapshot, by cause.
func TestBindFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		err        error
		cancel     bool // the leader's context ends during the binding
		wantQueued bool // the pod is still in the queue (backing off)
		wantEvent  bool // a FailedScheduling event is recorded
	}{
		// Lost leadership must not drop the pod: the next term binds it.
		{name: "leadership lost", err: context.Canceled, cancel: true, wantQueued: true},
		{name: "pod gone", err: apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")},
		{name: "rejected", err: apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("pod p is already assigned to node \"x\"")),
			wantQueued: true, wantEvent: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := fake.NewClientset()
			client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() == "binding" {
					return true, nil, tc.err
				}
				return false, nil, nil
			})
			rec := record.NewFakeRecorder(10)
			s := &Scheduler{client: client, recorder: rec, queue: queue.New(queue.Config{}),
				snap: framework.NewSnapshot([]*corev1.Node{ft.MakeNode("n").Obj()}, nil, nil), log: slog.New(slog.DiscardHandler)}
			pod := ft.MakePod("p").UID("u").Obj()
			s.queue.Add(pod)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			qp, err := s.queue.Pop(ctx)
			if err != nil {
				t.Fatal(err)
			}
			assumed := pod.DeepCopy()
			assumed.Spec.NodeName = "n"
			s.snap.AddPod(assumed)
			if tc.cancel {
				cancel()
			}
			s.bind(ctx, qp, pod, assumed)

			if _, ok := s.snap.NodeNameOf(pod); ok {
				t.Error("the pod is still assumed on its node")
			}
			active, backoff, unsched := s.queue.Len()
			if queued := active+backoff+unsched == 1; queued != tc.wantQueued {
				t.Errorf("queued = %v (active %d, backoff %d, unschedulable %d), want %v", queued, active, backoff, unsched, tc.wantQueued)
			}
			if got := len(rec.Events) > 0; got != tc.wantEvent {
				t.Errorf("event recorded = %v, want %v", got, tc.wantEvent)
			}
		})
	}
}

// TestRunBoundsBindingsInFlight: with bindings that do not return, the
// loop starts maxBindsInFlight of them and schedules no further pod until
// one finishes; then every pod gets bound.
func TestRunBoundsBindingsInFlight(t *testing.T) {
	t.Parallel()
	const pods = maxBindsInFlight + 8
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	var mu sync.Mutex
	inFlight, most, bound := 0, 0, 0
	// A real client against an API that holds every binding until release
	// (the fake clientset serializes its reactors).
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/binding") {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		<-release
		mu.Lock()
		inFlight--
		bound++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success","code":201}`))
	}))
	defer api.Close()
	defer releaseAll()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: api.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	profiles, err := config.Default().BuildProfiles()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*corev1.Pod{}
	s := &Scheduler{client: client, recorder: record.NewFakeRecorder(1000), queue: queue.New(queue.Config{}), profiles: profiles,
		snap: framework.NewSnapshot([]*corev1.Node{ft.MakeNode("n").Capacity(map[string]string{"pods": "1000"}).Obj()}, nil, nil),
		log:  slog.New(slog.DiscardHandler), getPod: func(_, name string) (*corev1.Pod, bool) { p, ok := byName[name]; return p, ok }}
	for i := range pods {
		p := ft.MakePod(fmt.Sprintf("p%d", i)).UID(fmt.Sprintf("u%d", i)).Obj()
		p.Spec.SchedulerName = corev1.DefaultSchedulerName
		byName[p.Name] = p
		s.queue.Add(p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				a, b, u := s.queue.Len()
				t.Fatalf("timed out waiting for %s (queue %d/%d/%d, events %d)", what, a, b, u, len(s.recorder.(*record.FakeRecorder).Events))
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor("the first bindings", func() bool { mu.Lock(); defer mu.Unlock(); return inFlight == maxBindsInFlight })
	if active, _, _ := s.queue.Len(); active != pods-maxBindsInFlight {
		t.Errorf("%d pods left in the queue while %d bindings hang, want %d", active, maxBindsInFlight, pods-maxBindsInFlight)
	}
	releaseAll()
	waitFor("every binding", func() bool { mu.Lock(); defer mu.Unlock(); return bound == pods })
	cancel()
	<-done
	if most != maxBindsInFlight {
		t.Errorf("at most %d bindings in flight, want %d", most, maxBindsInFlight)
	}
}

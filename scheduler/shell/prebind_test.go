package shell

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
	"github.com/kubebus/kubebus/scheduler/queue"
)

// fakeBinding is a Reserve and PreBind plugin that records its calls.
type fakeBinding struct {
	preBindErr error
	calls      []string
}

func (f *fakeBinding) Name() string { return "FakeBinding" }

func (f *fakeBinding) Reserve(_ context.Context, _ *framework.CycleState, _ *corev1.Pod, node string, _ *framework.Snapshot) *framework.Status {
	f.calls = append(f.calls, "reserve "+node)
	return nil
}

func (f *fakeBinding) Unreserve(_ context.Context, _ *framework.CycleState, _ *corev1.Pod, node string, _ *framework.Snapshot) {
	f.calls = append(f.calls, "unreserve "+node)
}

func (f *fakeBinding) PreBind(_ context.Context, _ *framework.CycleState, pod *corev1.Pod, node string, h framework.BindHandle) *framework.Status {
	f.calls = append(f.calls, "prebind "+node)
	if _, ok := h.Pod(pod.Namespace, pod.Name); !ok {
		return framework.AsStatus(errors.New("the handle does not read the pods cache"))
	}
	return framework.AsStatus(f.preBindErr)
}

// TestPreBind: a PreBind failure unreserves, forgets the assumed pod,
// records a FailedScheduling event and backs the pod off; success lets
// the binding go on.
func TestPreBind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want []string
	}{
		{"success", nil, []string{"prebind n"}},
		{"failure", errors.New("binding volumes: timed out"), []string{"prebind n", "unreserve n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pl := &fakeBinding{preBindErr: tc.err}
			prof := &framework.Profile{Reserve: []framework.ReservePlugin{pl}, PreBind: []framework.PreBindPlugin{pl}}
			rec := record.NewFakeRecorder(10)
			pod := ft.MakePod("p").UID("u").Obj()
			s := &Scheduler{client: fake.NewClientset(), recorder: rec, queue: queue.New(queue.Config{}),
				snap: framework.NewSnapshot([]*corev1.Node{ft.MakeNode("n").Obj()}, nil, nil), log: slog.New(slog.DiscardHandler),
				getPod: func(ns, name string) (*corev1.Pod, bool) { return pod, ns == pod.Namespace && name == pod.Name }}
			s.queue.Add(pod)
			ctx := context.Background()
			qp, err := s.queue.Pop(ctx)
			if err != nil {
				t.Fatal(err)
			}
			assumed := pod.DeepCopy()
			assumed.Spec.NodeName = "n"
			s.snap.AddPod(assumed)
			ok := s.preBind(ctx, qp, pod, assumed, prof, framework.NewCycleState())
			if ok != (tc.err == nil) {
				t.Fatalf("preBind = %v", ok)
			}
			if strings.Join(pl.calls, ",") != strings.Join(tc.want, ",") {
				t.Errorf("calls %v, want %v", pl.calls, tc.want)
			}
			_, assumedStill := s.snap.NodeNameOf(pod)
			active, backoff, unsched := s.queue.Len()
			if tc.err == nil {
				if !assumedStill || active+backoff+unsched != 0 || len(rec.Events) != 0 {
					t.Errorf("after success: assumed %v, queued %d, events %d", assumedStill, active+backoff+unsched, len(rec.Events))
				}
				return
			}
			if assumedStill {
				t.Error("the pod is still assumed")
			}
			if active+backoff+unsched != 1 {
				t.Errorf("the pod is not queued again (active %d, backoff %d, unschedulable %d)", active, backoff, unsched)
			}
			if ev := <-rec.Events; !strings.Contains(ev, "FailedScheduling") || !strings.Contains(ev, "timed out") {
				t.Errorf("event %q", ev)
			}
		})
	}
}

// blockingPreBind holds every pod in PreBind until release closes.
type blockingPreBind struct {
	mu      sync.Mutex
	waiting int
	release chan struct{}
}

func (b *blockingPreBind) Name() string { return "Blocking" }

func (b *blockingPreBind) PreBind(ctx context.Context, _ *framework.CycleState, _ *corev1.Pod, _ string, _ framework.BindHandle) *framework.Status {
	b.mu.Lock()
	b.waiting++
	b.mu.Unlock()
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return framework.AsStatus(ctx.Err())
	}
}

// TestPreBindFreesBindSlots: pods waiting in PreBind (for their volumes)
// hold no binding slot, so more than maxBindsInFlight of them may wait
// while the loop goes on; once they are released, every pod is bound.
func TestPreBindFreesBindSlots(t *testing.T) {
	t.Parallel()
	const pods = maxBindsInFlight + 8
	pl := &blockingPreBind{release: make(chan struct{})}
	prof := &framework.Profile{SchedulerName: corev1.DefaultSchedulerName, PreBind: []framework.PreBindPlugin{pl}}
	client := fake.NewClientset()
	var mu sync.Mutex
	bound := 0
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		mu.Lock()
		bound++
		mu.Unlock()
		return true, nil, nil
	})
	byName := map[string]*corev1.Pod{}
	s := &Scheduler{client: client, recorder: record.NewFakeRecorder(1000), queue: queue.New(queue.Config{}),
		profiles: map[string]*framework.Profile{corev1.DefaultSchedulerName: prof},
		snap:     framework.NewSnapshot([]*corev1.Node{ft.MakeNode("n").Obj()}, nil, nil),
		log:      slog.New(slog.DiscardHandler)}
	for i := range pods {
		p := ft.MakePod(fmt.Sprintf("p%d", i)).UID(fmt.Sprintf("u%d", i)).Obj()
		p.Spec.SchedulerName = corev1.DefaultSchedulerName
		byName[p.Name] = p
	}
	s.getPod = func(_, name string) (*corev1.Pod, bool) { p, ok := byName[name]; return p, ok }
	for _, p := range byName {
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
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor("every pod in PreBind", func() bool { pl.mu.Lock(); defer pl.mu.Unlock(); return pl.waiting == pods })
	close(pl.release)
	waitFor("every binding", func() bool { mu.Lock(); defer mu.Unlock(); return bound == pods })
	cancel()
	<-done
}

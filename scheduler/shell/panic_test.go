package shell

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/internal/crash/crashtest"
	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
	"github.com/kubebus/kubebus/scheduler/queue"
)

// panicFilter is the test hook: a Filter plugin that panics on the first
// cycle of one pod.
type panicFilter struct {
	pod      string
	panicked atomic.Bool
}

func (p *panicFilter) Name() string { return "PanicFilter" }

func (p *panicFilter) Filter(_ context.Context, _ *framework.CycleState, pod *corev1.Pod, _ *framework.NodeInfo) *framework.Status {
	if pod.Name == p.pod && p.panicked.CompareAndSwap(false, true) {
		panic("filter hook panics on purpose")
	}
	return nil
}

// TestRunSurvivesPluginPanic: a plugin that panics while scheduling one pod
// costs that pod a backoff; the loop schedules the other pod, then the
// panicking one on its retry. The panic is counted and logged with its
// stack, and the pod gets a FailedScheduling event.
func TestRunSurvivesPluginPanic(t *testing.T) {
	var mu sync.Mutex
	bound := map[string]string{}
	client := fake.NewClientset()
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := a.(k8stesting.CreateAction).GetObject().(*corev1.Binding)
		mu.Lock()
		bound[b.Name] = b.Target.Name
		mu.Unlock()
		return true, b, nil
	})
	hook := &panicFilter{pod: "bad"}
	profiles := map[string]*framework.Profile{corev1.DefaultSchedulerName: {
		SchedulerName: corev1.DefaultSchedulerName, Filter: []framework.FilterPlugin{hook}}}
	byName := map[string]*corev1.Pod{}
	var logs crashtest.Log
	rec := record.NewFakeRecorder(100)
	s := &Scheduler{client: client, recorder: rec, profiles: profiles,
		queue: queue.New(queue.Config{InitialBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}),
		snap:  framework.NewSnapshot([]*corev1.Node{ft.MakeNode("n").Capacity(map[string]string{"pods": "10"}).Obj()}, nil, nil),
		log:   logs.Logger(), getPod: func(_, name string) (*corev1.Pod, bool) { p, ok := byName[name]; return p, ok }}
	for _, name := range []string{"bad", "good"} {
		p := ft.MakePod(name).UID("u-" + name).Obj()
		p.Spec.SchedulerName = corev1.DefaultSchedulerName
		byName[name] = p
		s.queue.Add(p)
	}
	panics := crashtest.Watch("scheduler", "schedule")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(bound)
		mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bound %v, want both pods", bound)
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done

	if !hook.panicked.Load() {
		t.Fatal("the hook never panicked")
	}
	if bound["bad"] != "n" || bound["good"] != "n" {
		t.Errorf("bindings = %v", bound)
	}
	panics.Expect(t, 1)
	logs.Contains(t, `"key":"default/bad"`, "filter hook panics on purpose", "shell.(*panicFilter).Filter")
	var failed bool
	for len(rec.Events) > 0 {
		if e := <-rec.Events; strings.Contains(e, "FailedScheduling") && strings.Contains(e, "panicked") {
			failed = true
		}
	}
	if !failed {
		t.Error("no FailedScheduling event for the panic")
	}
}

package controllers

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/kubebus/kubebus/internal/crash/crashtest"
)

// panicOnce is the test hook: its first reconcile of bad panics.
type panicOnce struct {
	recorder
	bad      Request
	panicked atomic.Bool
}

func (p *panicOnce) Reconcile(ctx context.Context, req Request) (Result, error) {
	if req == p.bad && p.panicked.CompareAndSwap(false, true) {
		panic("reconcile hook panics on purpose")
	}
	return p.recorder.Reconcile(ctx, req)
}

// TestControllerSurvivesReconcilePanic: a reconciler that panics on one key
// costs that key one retry; the other keys are reconciled, the panic is
// counted and logged with its stack.
func TestControllerSurvivesReconcilePanic(t *testing.T) {
	bad, a, b := Request{Namespace: "ns", Name: "bad"}, Request{Namespace: "ns", Name: "a"}, Request{Namespace: "ns", Name: "b"}
	r := &panicOnce{recorder: recorder{seen: map[Request]int{}, fail: map[Request]int{}, term: map[Request]bool{}}, bad: bad}
	var logs crashtest.Log
	c := New("panic-test", r, Options{Workers: 1, Logger: logs.Logger()})
	panics := crashtest.Watch("controller", "panic-test")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	c.Enqueue(bad)
	c.Enqueue(a)
	c.Enqueue(b)
	waitFor(t, func() bool { return r.count(a) == 1 && r.count(b) == 1 && r.count(bad) == 1 })
	cancel()
	<-done
	if !r.panicked.Load() {
		t.Fatal("the hook never panicked")
	}
	panics.Expect(t, 1)
	logs.Contains(t, `"key":"ns/bad"`, `"panic":"reconcile hook panics on purpose"`, "controllers.(*panicOnce).Reconcile")
}

// panicRunnable panics on its first Run and then runs until ctx ends.
type panicRunnable struct{ runs atomic.Int32 }

func (p *panicRunnable) Run(ctx context.Context) {
	if p.runs.Add(1) == 1 {
		panic("runnable hook panics on purpose")
	}
	<-ctx.Done()
}

type blockingRunnable struct{ started atomic.Bool }

func (b *blockingRunnable) Run(ctx context.Context) {
	b.started.Store(true)
	<-ctx.Done()
}

// TestManagerRestartsPanickingRunnable: a runnable that panics is run again
// after a backoff while the others keep running.
func TestManagerRestartsPanickingRunnable(t *testing.T) {
	p, other := &panicRunnable{}, &blockingRunnable{}
	m := &Manager{Lease: LeaseConfig{Disabled: true}, Logger: slog.New(slog.DiscardHandler)}
	m.Add(p)
	m.Add(other)
	panics := crashtest.Watch("manager", "*controllers.panicRunnable")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	waitFor(t, func() bool { return p.runs.Load() == 2 && other.started.Load() })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	panics.Expect(t, 1)
}

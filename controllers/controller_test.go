package controllers

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// recorder counts reconciles per key.
type recorder struct {
	mu   sync.Mutex
	seen map[Request]int
	fail map[Request]int // fail this many times first
	term map[Request]bool
}

func (r *recorder) Reconcile(_ context.Context, req Request) (Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[req]++
	if r.term[req] {
		return Result{}, Terminal(errors.New("bad object"))
	}
	if r.fail[req] > 0 {
		r.fail[req]--
		return Result{}, errors.New("transient")
	}
	return Result{}, nil
}

func (r *recorder) count(req Request) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[req]
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		select {
		case <-time.After(5 * time.Millisecond):
		case <-context.Background().Done():
		}
	}
}

func TestControllerRetriesAndTerminal(t *testing.T) {
	a, b := Request{Namespace: "ns", Name: "a"}, Request{Namespace: "ns", Name: "b"}
	r := &recorder{seen: map[Request]int{}, fail: map[Request]int{a: 2}, term: map[Request]bool{b: true}}
	c := New("test", r, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	c.Enqueue(a)
	c.Enqueue(b)
	waitFor(t, func() bool { return r.count(a) == 3 })
	cancel()
	<-done
	if got := r.count(b); got != 1 {
		t.Errorf("a terminal error was retried: %d reconciles", got)
	}
}

// TestControllerSurvivesLeadershipTerms: Run may end (lost lease) and run
// again (re-elected); keys queued in between are reconciled.
func TestControllerSurvivesLeadershipTerms(t *testing.T) {
	r := &recorder{seen: map[Request]int{}, fail: map[Request]int{}, term: map[Request]bool{}}
	c := New("test", r, Options{})
	for term := 0; term < 3; term++ {
		key := Request{Name: string(rune('a' + term))}
		c.Enqueue(key) // queued while not leading
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); c.Run(ctx) }()
		waitFor(t, func() bool { return r.count(key) == 1 })
		cancel()
		<-done
	}
}

package framework

import (
	"strings"
	"sync/atomic"
	"testing"
)

// TestParallelizeHandsAWorkerPanicToTheCaller: a panic on a worker
// goroutine reaches the caller's goroutine (where it can be recovered)
// after every worker stopped, with the worker's stack.
func TestParallelizeHandsAWorkerPanicToTheCaller(t *testing.T) {
	t.Parallel()
	var ran atomic.Int64
	var got any
	func() {
		defer func() { got = recover() }()
		Parallelize(4, 1000, func(i int) {
			ran.Add(1)
			if i == 500 {
				panic("worker hook panics on purpose")
			}
		})
	}()
	p, ok := got.(*WorkerPanic)
	if !ok {
		t.Fatalf("recovered %v (%T), want a *WorkerPanic", got, got)
	}
	if p.Value != "worker hook panics on purpose" {
		t.Errorf("value = %v", p.Value)
	}
	if !strings.Contains(string(p.Stack), "TestParallelizeHandsAWorkerPanicToTheCaller") {
		t.Errorf("the stack lacks the panicking fn:\n%s", p.Stack)
	}
	if !strings.Contains(p.String(), "worker hook panics on purpose") {
		t.Errorf("String() = %s", p.String())
	}
	if ran.Load() < 2 {
		t.Errorf("ran %d items", ran.Load())
	}
}

package controllers

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

type syncFlag struct{ atomic.Bool }

func (s *syncFlag) HasSynced() bool { return s.Load() }

// TestBorrowedWaitsWithoutRunning: a borrowed cache reports its owner's
// sync state and its Run returns only when ctx ends.
func TestBorrowedWaitsWithoutRunning(t *testing.T) {
	t.Parallel()
	owner := &syncFlag{}
	b := Borrowed{Synced: owner}
	if b.HasSynced() {
		t.Fatal("synced before the owner")
	}
	owner.Store(true)
	if !b.HasSynced() {
		t.Fatal("not synced after the owner")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("Run returned %v before ctx ended", err)
	default:
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after ctx ended")
	}
}

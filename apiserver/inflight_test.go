package apiserver

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestInflightWaitsForASlot(t *testing.T) {
	t.Parallel()
	l := newInflight(1, time.Minute)
	release, err := l.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		r, err := l.acquire(context.Background())
		if err == nil {
			r()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("the second request did not wait for the slot: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the waiting request failed once the slot was free: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting request did not get the freed slot")
	}
}

func TestInflightRejectsAfterTheWait(t *testing.T) {
	t.Parallel()
	for _, wait := range []time.Duration{-1, 20 * time.Millisecond} {
		l := newInflight(1, wait)
		if _, err := l.acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
		_, err := l.acquire(context.Background())
		if !apierrors.IsTooManyRequests(err) {
			t.Errorf("wait %v: past the bound got %v, want 429", wait, err)
		}
		if d, ok := apierrors.SuggestsClientDelay(err); !ok || d != 1 {
			t.Errorf("wait %v: Retry-After %d (%t), want 1", wait, d, ok)
		}
	}
}

func TestInflightGivesUpWithTheClient(t *testing.T) {
	t.Parallel()
	l := newInflight(1, time.Minute)
	if _, err := l.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.acquire(ctx); !apierrors.IsTimeout(err) {
		t.Errorf("a request whose client left got %v, want a timeout", err)
	}
}

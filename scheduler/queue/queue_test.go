package queue

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func pod(name string, prio int32) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}, Spec: v1.PodSpec{Priority: &prio}}
}

func popNow(t *testing.T, q *Queue) (Queued, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	qp, err := q.Pop(ctx)
	return qp, err == nil
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	c := Config{InitialBackoff: time.Second, MaxBackoff: 10 * time.Second}
	for n, want := range map[int]time.Duration{0: 0, 1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 30: 10 * time.Second} {
		if got := c.Backoff(n); got != want {
			t.Errorf("Backoff(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestOrder(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: time.Unix(1000, 0)}
	q := New(Config{Now: clk.now})
	q.Add(pod("old-low", 0))
	clk.t = clk.t.Add(time.Second)
	q.Add(pod("new-high", 10))
	clk.t = clk.t.Add(time.Second)
	q.Add(pod("new-low", 0))
	for _, want := range []string{"new-high", "old-low", "new-low"} {
		qp, ok := popNow(t, q)
		if !ok || qp.Pod.Name != want {
			t.Fatalf("popped %v (%v), want %s", qp.Pod, ok, want)
		}
	}
}

func TestUnschedulableWaitsForMove(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		moveDuring bool // a MoveAll while the pod is in flight
		advance    time.Duration
		wantPop    bool
	}{
		{name: "no event: stays", wantPop: false, advance: time.Minute},
		{name: "event during attempt: backoff then active", moveDuring: true, advance: time.Second, wantPop: true},
		{name: "event during attempt: backoff not expired", moveDuring: true, advance: 500 * time.Millisecond, wantPop: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := &fakeClock{t: time.Unix(1000, 0)}
			q := New(Config{Now: clk.now})
			q.Add(pod("p", 0))
			qp, _ := popNow(t, q)
			if tt.moveDuring {
				q.MoveAll()
			}
			q.Unschedulable(qp)
			clk.t = clk.t.Add(tt.advance)
			if _, ok := popNow(t, q); ok != tt.wantPop {
				t.Fatalf("popped = %v, want %v", ok, tt.wantPop)
			}
		})
	}
}

func TestMoveAllRespectsBackoff(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: time.Unix(1000, 0)}
	q := New(Config{Now: clk.now})
	q.Add(pod("p", 0))
	qp, _ := popNow(t, q)
	q.Unschedulable(qp)
	q.MoveAll()
	if a, b, u := q.Len(); a != 0 || b != 1 || u != 0 {
		t.Fatalf("Len = %d %d %d, want 0 1 0", a, b, u)
	}
	clk.t = clk.t.Add(time.Second)
	qp, ok := popNow(t, q)
	if !ok || qp.Attempts != 1 {
		t.Fatalf("pop after backoff: %v attempts %d", ok, qp.Attempts)
	}
	// A second failure doubles the backoff.
	q.Backoff(qp)
	clk.t = clk.t.Add(1500 * time.Millisecond)
	if _, ok := popNow(t, q); ok {
		t.Fatal("popped before the 2s backoff expired")
	}
	clk.t = clk.t.Add(time.Second)
	if _, ok := popNow(t, q); !ok {
		t.Fatal("not popped after the 2s backoff")
	}
}

func TestDeleteAndForget(t *testing.T) {
	t.Parallel()
	q := New(Config{})
	q.Add(pod("a", 0))
	q.Add(pod("b", 0))
	q.Delete(pod("a", 0))
	qp, ok := popNow(t, q)
	if !ok || qp.Pod.Name != "b" {
		t.Fatalf("popped %v", qp.Pod)
	}
	q.Forget(qp.Pod)
	q.Unschedulable(qp) // after Forget: ignored
	if a, b, u := q.Len(); a+b+u != 0 {
		t.Fatalf("Len = %d %d %d, want empty", a, b, u)
	}
}

func TestUpdateMovesUnschedulable(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: time.Unix(1000, 0)}
	q := New(Config{Now: clk.now})
	q.Add(pod("p", 0))
	qp, _ := popNow(t, q)
	q.Unschedulable(qp)
	q.Update(pod("p", 0)) // status-only: stays
	if _, _, u := q.Len(); u != 1 {
		t.Fatalf("status update moved the pod")
	}
	clk.t = clk.t.Add(2 * time.Second)
	q.Add(pod("p", 0)) // spec change: moves
	if _, ok := popNow(t, q); !ok {
		t.Fatal("spec update did not move the pod")
	}
}

func TestPopWakesOnAdd(t *testing.T) {
	t.Parallel()
	q := New(Config{})
	got := make(chan string, 1)
	go func() {
		qp, err := q.Pop(context.Background())
		if err == nil {
			got <- qp.Pod.Name
		}
	}()
	q.Add(pod("late", 0))
	select {
	case n := <-got:
		if n != "late" {
			t.Fatalf("popped %s", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Pop did not wake")
	}
}

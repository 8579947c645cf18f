package expectations

import (
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func TestExpectations(t *testing.T) {
	t.Parallel()
	const key = "ns/rs"
	type step struct {
		do   func(e *Expectations, clock *time.Time)
		want bool // Satisfied(key) afterwards
	}
	tests := []struct {
		name  string
		ttl   time.Duration
		steps []step
	}{
		{"nothing expected", 0, []step{{func(*Expectations, *time.Time) {}, true}}},
		{"creations", 0, []step{
			{func(e *Expectations, _ *time.Time) { e.ExpectCreations(key, 2) }, false},
			{func(e *Expectations, _ *time.Time) { e.CreationsObserved(key, 1) }, false},
			{func(e *Expectations, _ *time.Time) { e.CreationsObserved(key, 1) }, true},
			{func(e *Expectations, _ *time.Time) { e.CreationsObserved(key, 1) }, true},
		}},
		{"failed creations lowered at once", 0, []step{
			{func(e *Expectations, _ *time.Time) { e.ExpectCreations(key, 5) }, false},
			{func(e *Expectations, _ *time.Time) { e.CreationsObserved(key, 3) }, false},
			{func(e *Expectations, _ *time.Time) { e.CreationsObserved(key, 2) }, true},
		}},
		{"named deletions", 0, []step{
			{func(e *Expectations, _ *time.Time) { e.ExpectDeletions(key, []string{"ns/a", "ns/b"}) }, false},
			{func(e *Expectations, _ *time.Time) { e.DeletionObserved(key, "ns/a") }, false},
			{func(e *Expectations, _ *time.Time) { e.DeletionObserved(key, "ns/a") }, false},
			{func(e *Expectations, _ *time.Time) { e.DeletionObserved(key, "ns/c") }, false},
			{func(e *Expectations, _ *time.Time) { e.DeletionObserved(key, "ns/b") }, true},
		}},
		{"creations and named deletions together", 0, []step{
			{func(e *Expectations, _ *time.Time) { e.Expect(key, 1, []string{"ns/a"}) }, false},
			{func(e *Expectations, _ *time.Time) { e.CreationsObserved(key, 1) }, false},
			{func(e *Expectations, _ *time.Time) { e.DeletionObserved(key, "ns/a") }, true},
		}},
		{"expecting replaces what was expected", 0, []step{
			{func(e *Expectations, _ *time.Time) { e.ExpectDeletions(key, []string{"ns/a"}) }, false},
			{func(e *Expectations, _ *time.Time) { e.ExpectCreations(key, 1) }, false},
			{func(e *Expectations, _ *time.Time) { e.CreationsObserved(key, 1) }, true},
		}},
		{"counted deletions", 0, []step{
			{func(e *Expectations, _ *time.Time) { e.ExpectCounts(key, 0, 2) }, false},
			{func(e *Expectations, _ *time.Time) { e.DeletionsObserved(key, 1) }, false},
			{func(e *Expectations, _ *time.Time) { e.DeletionsObserved(key, 1) }, true},
			{func(e *Expectations, _ *time.Time) { e.DeletionsObserved(key, 1) }, true},
		}},
		{"counted creations and deletions", 0, []step{
			{func(e *Expectations, _ *time.Time) { e.ExpectCounts(key, 1, 1) }, false},
			{func(e *Expectations, _ *time.Time) { e.DeletionsObserved(key, 1) }, false},
			{func(e *Expectations, _ *time.Time) { e.CreationsObserved(key, 1) }, true},
		}},
		{"observations before any expectation are dropped", 0, []step{
			{func(e *Expectations, _ *time.Time) { e.CreationsObserved(key, 3) }, true},
			{func(e *Expectations, _ *time.Time) { e.ExpectCreations(key, 1) }, false},
		}},
		{"other keys do not interfere", 0, []step{
			{func(e *Expectations, _ *time.Time) { e.ExpectCreations(key, 1) }, false},
			{func(e *Expectations, _ *time.Time) { e.CreationsObserved("ns/other", 1) }, false},
		}},
		{"expire after the default TTL", 0, []step{
			{func(e *Expectations, _ *time.Time) { e.ExpectCreations(key, 1) }, false},
			{func(_ *Expectations, c *time.Time) { *c = c.Add(DefaultTTL) }, false},
			{func(_ *Expectations, c *time.Time) { *c = c.Add(time.Second) }, true},
		}},
		{"expire after a custom TTL", time.Minute, []step{
			{func(e *Expectations, _ *time.Time) { e.ExpectDeletions(key, []string{"ns/a"}) }, false},
			{func(_ *Expectations, c *time.Time) { *c = c.Add(time.Minute + time.Second) }, true},
			{func(e *Expectations, _ *time.Time) { e.ExpectDeletions(key, []string{"ns/a"}) }, false},
		}},
		{"forget", 0, []step{
			{func(e *Expectations, _ *time.Time) { e.ExpectCreations(key, 1) }, false},
			{func(e *Expectations, _ *time.Time) { e.Forget(key) }, true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := t0
			e := New(func() time.Time { return clock }, tt.ttl)
			for i, s := range tt.steps {
				s.do(e, &clock)
				if got := e.Satisfied(key); got != s.want {
					t.Fatalf("step %d: Satisfied = %v, want %v", i, got, s.want)
				}
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	t.Parallel()
	e := New(nil, 0)
	if e.ttl != DefaultTTL || e.now == nil {
		t.Fatalf("New(nil, 0): ttl %v, now set %v", e.ttl, e.now != nil)
	}
	e.ExpectCreations("k", 1)
	if e.Satisfied("k") {
		t.Fatal("satisfied with a creation outstanding")
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	e := New(nil, 0)
	const n = 50
	e.ExpectCreations("k", n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.CreationsObserved("k", 1)
			_ = e.Satisfied("k")
		}()
	}
	wg.Wait()
	if !e.Satisfied("k") {
		t.Fatal("not satisfied after every creation was observed")
	}
}

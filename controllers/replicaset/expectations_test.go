package replicaset

import (
	"testing"
	"time"
)

func TestExpectations(t *testing.T) {
	t.Parallel()
	type step struct {
		do   func(e *expectations, clock *time.Time)
		want bool // satisfied("ns/rs") afterwards
	}
	const key = "ns/rs"
	tests := []struct {
		name  string
		steps []step
	}{
		{"nothing expected", []step{{func(*expectations, *time.Time) {}, true}}},
		{"creations", []step{
			{func(e *expectations, _ *time.Time) { e.expectCreations(key, 2) }, false},
			{func(e *expectations, _ *time.Time) { e.creationsObserved(key, 1) }, false},
			{func(e *expectations, _ *time.Time) { e.creationsObserved(key, 1) }, true},
			{func(e *expectations, _ *time.Time) { e.creationsObserved(key, 1) }, true},
		}},
		{"failed creations lowered at once", []step{
			{func(e *expectations, _ *time.Time) { e.expectCreations(key, 5) }, false},
			{func(e *expectations, _ *time.Time) { e.creationsObserved(key, 3) }, false},
			{func(e *expectations, _ *time.Time) { e.creationsObserved(key, 2) }, true},
		}},
		{"deletions by pod", []step{
			{func(e *expectations, _ *time.Time) { e.expectDeletions(key, []string{"ns/a", "ns/b"}) }, false},
			{func(e *expectations, _ *time.Time) { e.deletionObserved(key, "ns/a") }, false},
			{func(e *expectations, _ *time.Time) { e.deletionObserved(key, "ns/a") }, false},
			{func(e *expectations, _ *time.Time) { e.deletionObserved(key, "ns/c") }, false},
			{func(e *expectations, _ *time.Time) { e.deletionObserved(key, "ns/b") }, true},
		}},
		{"other keys do not interfere", []step{
			{func(e *expectations, _ *time.Time) { e.expectCreations(key, 1) }, false},
			{func(e *expectations, _ *time.Time) { e.creationsObserved("ns/other", 1) }, false},
		}},
		{"expire after the TTL", []step{
			{func(e *expectations, _ *time.Time) { e.expectCreations(key, 1) }, false},
			{func(_ *expectations, c *time.Time) { *c = c.Add(expectationsTTL) }, false},
			{func(_ *expectations, c *time.Time) { *c = c.Add(time.Second) }, true},
		}},
		{"forget", []step{
			{func(e *expectations, _ *time.Time) { e.expectCreations(key, 1) }, false},
			{func(e *expectations, _ *time.Time) { e.forget(key) }, true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := t0
			e := newExpectations(func() time.Time { return clock })
			for i, s := range tt.steps {
				s.do(e, &clock)
				if got := e.satisfied(key); got != s.want {
					t.Fatalf("step %d: satisfied = %v, want %v", i, got, s.want)
				}
			}
		})
	}
}

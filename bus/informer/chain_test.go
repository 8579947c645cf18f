package informer

import "testing"

func TestChain(t *testing.T) {
	t.Parallel()
	type step struct {
		prev, rev int64
		restart   bool // restart before this step
		ok        bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"the first event is taken as is", []step{{prev: 40, rev: 50, ok: true}, {prev: 50, rev: 51, ok: true}}},
		{"a link names the last event", []step{{prev: 0, rev: 3, ok: true}, {prev: 3, rev: 7, ok: true}, {prev: 7, rev: 9, ok: true}}},
		{"a missed event breaks the chain", []step{{prev: 0, rev: 3, ok: true}, {prev: 5, rev: 7, ok: false}, {prev: 7, rev: 8, ok: true}}},
		{"a replayed event breaks the chain", []step{{prev: 0, rev: 3, ok: true}, {prev: 3, rev: 7, ok: true}, {prev: 0, rev: 3, ok: false}}},
		{"a restart forgets the end", []step{{prev: 0, rev: 3, ok: true}, {prev: 90, rev: 95, restart: true, ok: true}, {prev: 94, rev: 96, ok: false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var c chain
			for i, s := range tc.steps {
				if s.restart {
					c.restart()
				}
				if got := c.next(s.prev, s.rev); got != s.ok {
					t.Errorf("step %d: next(%d, %d) = %v, want %v", i, s.prev, s.rev, got, s.ok)
				}
			}
		})
	}
}

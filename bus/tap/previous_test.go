package tap

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/kubebus/kubebus/bus"
)

// stubStream answers lastBefore from a fixed map of subject → (revision,
// object), counting the requests.
type stubStream struct {
	msgs  map[string]remembered
	err   error
	calls int
}

func (s *stubStream) lastBefore(_ context.Context, subject string, _ uint64) (json.RawMessage, int64, error) {
	s.calls++
	if s.err != nil {
		return nil, 0, s.err
	}
	m, ok := s.msgs[subject]
	if !ok {
		return nil, 0, nil
	}
	return m.obj, m.rev, nil
}

func update(name string, rev, prev int64) *bus.Event {
	return &bus.Event{Type: bus.Modified, Revision: rev, PreviousRevision: prev, Resource: "configmaps", Namespace: "ns", Name: name,
		Object: json.RawMessage(`{"rev":` + itoa(int(rev)) + `}`)}
}

func TestPreviousStates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	subject := func(name string) string {
		return bus.HistorySubject(bus.ObjectKey{Resource: "configmaps", Namespace: "ns", Name: name})
	}

	t.Run("from the last state read, without asking", func(t *testing.T) {
		s := &stubStream{}
		p := newPreviousStates(s.lastBefore)
		p.remember(&bus.Event{Type: bus.Added, Revision: 3, Resource: "configmaps", Namespace: "ns", Name: "a", Object: json.RawMessage(`{"rev":3}`)})
		ev := update("a", 5, 3)
		if err := p.fill(ctx, ev, 9); err != nil || string(ev.Previous) != `{"rev":3}` || s.calls != 0 {
			t.Fatalf("previous %s, err %v, %d requests", ev.Previous, err, s.calls)
		}
	})

	t.Run("from the stream, only when it matches the revision", func(t *testing.T) {
		s := &stubStream{msgs: map[string]remembered{subject("a"): {rev: 3, obj: json.RawMessage(`{"rev":3}`)}, subject("b"): {rev: 2, obj: json.RawMessage(`{"rev":2}`)}}}
		p := newPreviousStates(s.lastBefore)
		ev := update("a", 5, 3)
		if err := p.fill(ctx, ev, 9); err != nil || string(ev.Previous) != `{"rev":3}` || s.calls != 1 {
			t.Fatalf("previous %s, err %v, %d requests", ev.Previous, err, s.calls)
		}
		// b's message at revision 4 is gone: an older one is not it. The
		// first miss is asked once more (a replica may lag), later ones not.
		ev = update("b", 6, 4)
		if err := p.fill(ctx, ev, 10); err != nil || len(ev.Previous) != 0 || s.calls != 3 {
			t.Fatalf("previous %s, err %v, %d requests (want none, 3)", ev.Previous, err, s.calls)
		}
		ev = update("b", 7, 6)
		if err := p.fill(ctx, ev, 11); err != nil || len(ev.Previous) != 0 || s.calls != 4 {
			t.Fatalf("previous %s, err %v, %d requests (want none, 4)", ev.Previous, err, s.calls)
		}
	})

	t.Run("a complete read does not ask", func(t *testing.T) {
		s := &stubStream{msgs: map[string]remembered{subject("a"): {rev: 3, obj: json.RawMessage(`{"rev":3}`)}}}
		p := newPreviousStates(s.lastBefore)
		p.complete = true
		ev := update("a", 5, 3)
		if err := p.fill(ctx, ev, 9); err != nil || len(ev.Previous) != 0 || s.calls != 0 {
			t.Fatalf("previous %s, err %v, %d requests", ev.Previous, err, s.calls)
		}
	})

	t.Run("a failed request stops the asking", func(t *testing.T) {
		s := &stubStream{err: errors.New("nats: timeout")}
		p := newPreviousStates(s.lastBefore)
		err := p.fill(ctx, update("a", 5, 3), 9)
		if err == nil || !strings.Contains(err.Error(), "nats: timeout") || !strings.Contains(err.Error(), "from now on") {
			t.Fatalf("err %v", err)
		}
		if err := p.fill(ctx, update("b", 6, 4), 10); err != nil || s.calls != 1 {
			t.Fatalf("after a failure: err %v, %d requests (want 1)", err, s.calls)
		}
	})

	t.Run("forgetting past the byte budget ends a complete read", func(t *testing.T) {
		p := newPreviousStates(nil)
		p.complete = true
		big := json.RawMessage(`"` + strings.Repeat("x", maxRememberedBytes/2) + `"`)
		for i, name := range []string{"a", "b", "c"} {
			p.remember(&bus.Event{Type: bus.Added, Revision: int64(i + 1), Resource: "configmaps", Namespace: "ns", Name: name, Object: big})
		}
		if len(p.last) != 1 || p.complete || p.bytes != len(big) {
			t.Fatalf("%d states, %d bytes, complete %v (want 1, %d, false)", len(p.last), p.bytes, p.complete, len(big))
		}
		p.remember(&bus.Event{Type: bus.Deleted, Revision: 4, Resource: "configmaps", Namespace: "ns", Name: "c", Object: big})
		if len(p.last) != 0 || p.bytes != 0 {
			t.Fatalf("after the delete: %d states, %d bytes", len(p.last), p.bytes)
		}
	})
}

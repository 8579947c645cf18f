package publish

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebus/kubebus/bus"
)

// poll waits until cond holds, failing the test after d.
func poll(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not a wait for an effect
	}
}

// stateObjects reads KUBE_STATE's object subjects (kstate.>) that are
// not tombstones.
func stateObjects(ctx context.Context, js jetstream.JetStream) (map[string]int64, error) {
	st, err := js.Stream(ctx, bus.StateStream)
	if err != nil {
		return nil, err
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter("kstate.>"))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for subj := range info.State.Subjects {
		msg, err := st.GetLastMsgForSubject(ctx, subj)
		if err != nil {
			return nil, err
		}
		ev, err := bus.Decode(msg.Data)
		if err != nil {
			return nil, err
		}
		if ev.Type != bus.Deleted {
			out[subj] = ev.Revision
		}
	}
	return out, nil
}

func lastHistoryRevision(ctx context.Context, js jetstream.JetStream, subject string) int64 {
	st, err := js.Stream(ctx, bus.HistoryStream)
	if err != nil {
		return 0
	}
	msg, err := st.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		return 0
	}
	return bus.HeaderInt(msg.Header, bus.HeaderRevision)
}

// TestPublisherRecreatesLostStreams: every stream is deleted under a
// running publisher; it creates them again, rewrites KUBE_STATE from etcd,
// marks the reset with a GAP on KUBE_HISTORY, and goes on publishing.
func TestPublisherRecreatesLostStreams(t *testing.T) {
	_, js := startNATS(t)
	src := newFakeSource()
	for i := range 20 {
		src.put(fmt.Sprintf("/registry/core/configmaps/default/cm-%d", i), fmt.Sprintf(`{"metadata":{"name":"cm-%d"},"i":%d}`, i, i))
	}
	stop := runPublisher(t, src, alwaysLeader{}, js)
	defer stop()
	historyRevisions(t, js, 20)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, name := range bus.StreamNames {
		if err := js.DeleteStream(ctx, name); err != nil {
			t.Fatalf("deleting %s: %v", name, err)
		}
	}
	// A deletion while the streams are gone: the state must not bring
	// the object back.
	src.del("/registry/core/configmaps/default/cm-3")
	poll(t, 30*time.Second, "the streams recreated and the state reseeded", func() bool {
		objs, err := stateObjects(ctx, js)
		return err == nil && len(objs) == 19 && lastHistoryRevision(ctx, js, bus.GapSubject) > 0
	})
	objs, _ := stateObjects(ctx, js)
	if _, ok := objs[bus.StateSubject(bus.ObjectKey{Resource: "configmaps", Namespace: "default", Name: "cm-3"})]; ok {
		t.Errorf("the deleted object is in the reseeded state")
	}
	for _, name := range bus.StreamNames {
		if _, err := js.Stream(ctx, name); err != nil {
			t.Errorf("stream %s: %v", name, err)
		}
	}
	rev := src.put("/registry/core/configmaps/default/new", `{"metadata":{"name":"new"}}`)
	poll(t, 30*time.Second, "a new revision published after the reset", func() bool {
		return lastHistoryRevision(ctx, js, bus.HistorySubject(bus.ObjectKey{Resource: "configmaps", Namespace: "default", Name: "new"})) == rev
	})
	// The new history is in order: the GAP, then the new revision.
	revs, evs := historyRevisions(t, js, 2)
	if len(evs) != 2 || evs[0].Type != bus.Gap || revs[1] != rev {
		t.Fatalf("history after the reset: %v %+v", revs, evs)
	}
}

// TestPublisherReadyReportsAFullStore: with KUBE_STATE too small, the
// publisher stalls; Ready fails with the cause after the stall window and
// passes again once the stream has room and the bus caught up, with every
// revision published once, in order.
func TestPublisherReadyReportsAFullStore(t *testing.T) {
	_, js := startNATS(t)
	src := newFakeSource()
	p, err := New(Config{Source: src, Elector: alwaysLeader{}, JetStream: js, Logger: quiet(),
		Limits: bus.StreamLimits{StateMaxBytes: 8 << 10}, StallWindow: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	defer func() { cancel(); <-done }()

	src.put("/registry/core/configmaps/default/small", `{"metadata":{"name":"small"}}`)
	historyRevisions(t, js, 1)
	if err := p.Ready(ctx); err != nil {
		t.Fatalf("ready while publishing works: %v", err)
	}
	big := strings.Repeat("x", 3<<10)
	for i := range 6 {
		src.put(fmt.Sprintf("/registry/core/configmaps/default/big-%d", i), fmt.Sprintf(`{"metadata":{"name":"big-%d"},"data":%q}`, i, big))
	}
	var readyErr error
	poll(t, 30*time.Second, "Ready to fail", func() bool { readyErr = p.Ready(ctx); return readyErr != nil })
	if msg := readyErr.Error(); !strings.Contains(msg, "behind etcd") || !strings.Contains(msg, "store is full") {
		t.Fatalf("Ready's reason does not name the cause: %v", readyErr)
	}
	t.Logf("Ready: %v", readyErr)

	// Room again: the operator raises the limit.
	st, err := js.Stream(ctx, bus.StateStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.MaxBytes = 1 << 20
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "Ready to pass again", func() bool { return p.Ready(ctx) == nil })
	revs, _ := historyRevisions(t, js, 7)
	if len(revs) != 7 {
		t.Fatalf("history holds %d revisions, want 7", len(revs))
	}
	for i, r := range revs {
		if r != int64(i+1) {
			t.Fatalf("position %d holds revision %d, want %d", i, r, i+1)
		}
	}
	objs, err := stateObjects(ctx, js)
	if err != nil || len(objs) != 7 {
		t.Fatalf("state holds %d objects (%v), want 7", len(objs), err)
	}
}

// TestReadyOnlyWhenBehind: the stall rule itself.
func TestReadyOnlyWhenBehind(t *testing.T) {
	now := time.Unix(1000, 0)
	h := newHealth(quiet(), NewMetrics(nil), 30*time.Second)
	h.now = func() time.Time { return now }
	h.lead(true, 10)
	h.etcd(10)
	now = now.Add(time.Minute)
	if err := h.ready(); err != nil {
		t.Fatalf("caught up, yet: %v", err)
	}
	h.etcd(12)
	h.fail("publishing", errors.New("nats: insufficient storage resources available"))
	now = now.Add(20 * time.Second)
	h.etcd(15)
	h.done(11) // progress, but revision 12 has waited 20s
	if err := h.ready(); err != nil {
		t.Fatalf("within the window, yet: %v", err)
	}
	now = now.Add(11 * time.Second)
	err := h.ready()
	if err == nil || !strings.Contains(err.Error(), "4 revisions behind etcd for 31s") || !strings.Contains(err.Error(), "insufficient storage") {
		t.Fatalf("want a stall of 4 revisions for 31s naming the cause, got %v", err)
	}
	h.done(12)
	if err := h.ready(); err != nil {
		t.Fatalf("revision 12 published; 15 was seen 11s ago, yet: %v", err)
	}
	h.lead(false, 0)
	h.etcd(100)
	now = now.Add(time.Hour)
	if err := h.ready(); err != nil {
		t.Fatalf("not leading, yet: %v", err)
	}
}

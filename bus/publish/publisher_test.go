package publish

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/busauth"
	"github.com/kubebus/kubebus/bus/natsserver"
	"github.com/kubebus/kubebus/bus/natsserver/natstest"
)

// fakeSource is an in-memory etcd: a log of changes with a compaction point.
type fakeSource struct {
	mu        sync.Mutex
	log       []Change
	compacted int64 // revisions <= compacted are gone
	notify    chan struct{}
}

func newFakeSource() *fakeSource { return &fakeSource{notify: make(chan struct{})} }

func (f *fakeSource) rev() int64 {
	if len(f.log) == 0 {
		return 0
	}
	return f.log[len(f.log)-1].Revision
}

// put appends a change of key at the next revision.
func (f *fakeSource) put(key, value string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := Change{Revision: f.rev() + 1, Key: key, Value: []byte(value), Created: true}
	for i := len(f.log) - 1; i >= 0; i-- {
		if f.log[i].Key == key {
			if !f.log[i].Delete {
				c.Prev, c.PrevRevision, c.Created = f.log[i].Value, f.log[i].Revision, false
			}
			break
		}
	}
	f.log = append(f.log, c)
	close(f.notify)
	f.notify = make(chan struct{})
	return c.Revision
}

// del deletes key at the next revision.
func (f *fakeSource) del(key string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := Change{Revision: f.rev() + 1, Key: key, Delete: true}
	for i := len(f.log) - 1; i >= 0; i-- {
		if f.log[i].Key == key {
			c.Prev, c.PrevRevision = f.log[i].Value, f.log[i].Revision
			break
		}
	}
	f.log = append(f.log, c)
	close(f.notify)
	f.notify = make(chan struct{})
	return c.Revision
}

func (f *fakeSource) Changes(ctx context.Context, from int64) (<-chan Change, func() error) {
	out := make(chan Change)
	var err error
	go func() {
		defer close(out)
		next := from
		for {
			f.mu.Lock()
			if next <= f.compacted {
				f.mu.Unlock()
				err = ErrCompacted
				return
			}
			var batch []Change
			for _, c := range f.log {
				if c.Revision >= next {
					batch = append(batch, c)
				}
			}
			wait := f.notify
			f.mu.Unlock()
			for _, c := range batch {
				select {
				case out <- c:
					next = c.Revision + 1
				case <-ctx.Done():
					err = ctx.Err()
					return
				}
			}
			select {
			case <-wait:
			case <-ctx.Done():
				err = ctx.Err()
				return
			}
		}
	}()
	return out, func() error { return err }
}

func (f *fakeSource) Snapshot(context.Context) (int64, []KeyValue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	latest := map[string]Change{}
	for _, c := range f.log {
		latest[c.Key] = c
	}
	var kvs []KeyValue
	for k, c := range latest {
		if !c.Delete {
			kvs = append(kvs, KeyValue{Key: k, Value: c.Value, Revision: c.Revision})
		}
	}
	return f.rev(), kvs, nil
}

func (f *fakeSource) Revision(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rev(), nil
}

// alwaysLeader wins every election at once.
type alwaysLeader struct{}

func (alwaysLeader) Campaign(context.Context) (<-chan struct{}, func(context.Context) error, error) {
	return make(chan struct{}), func(context.Context) error { return nil }, nil
}

// startNATS starts a bus and connects as the publisher, whose role may do
// everything the tests do.
func startNATS(t testing.TB) (*natsserver.Server, jetstream.JetStream) {
	t.Helper()
	s := natstest.Start(t)
	_, js := s.Connect(t, busauth.PublisherUser)
	return s.Server, js
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func runPublisher(t testing.TB, src Source, el Elector, js jetstream.JetStream) (stop func()) {
	t.Helper()
	p, err := New(Config{Source: src, Elector: el, JetStream: js, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	return func() { cancel(); <-done }
}

// historyRevisions reads every object event's revision on KUBE_HISTORY.
func historyRevisions(t testing.TB, js jetstream.JetStream, want int) ([]int64, []*bus.Event) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var revs []int64
		var evs []*bus.Event
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := js.OrderedConsumer(ctx, bus.HistoryStream, jetstream.OrderedConsumerConfig{})
		if err == nil {
			for {
				m, err := c.Next(jetstream.FetchMaxWait(300 * time.Millisecond))
				if err != nil {
					break
				}
				ev, err := bus.Decode(m.Data())
				if err != nil {
					t.Fatalf("undecodable message on %s: %v", m.Subject(), err)
				}
				if ev.Type == bus.Progress {
					continue
				}
				revs = append(revs, ev.Revision)
				evs = append(evs, ev)
			}
		}
		cancel()
		if len(revs) >= want || time.Now().After(deadline) {
			return revs, evs
		}
	}
}

func TestPublishEveryRevisionOnceInOrder(t *testing.T) {
	_, js := startNATS(t)
	src := newFakeSource()
	stop := runPublisher(t, src, alwaysLeader{}, js)
	for i := 0; i < 50; i++ {
		src.put(fmt.Sprintf("/registry/core/configmaps/default/cm-%d", i%10), fmt.Sprintf(`{"i":%d}`, i))
	}
	src.put("/registry/apps/deployments/default/web", `{"spec":{}}`)
	revs, evs := historyRevisions(t, js, 51)
	stop()
	if len(revs) != 51 {
		t.Fatalf("published %d revisions, want 51", len(revs))
	}
	for i, r := range revs {
		if r != int64(i+1) {
			t.Fatalf("position %d holds revision %d, want %d", i, r, i+1)
		}
	}
	if evs[0].Type != bus.Added || evs[10].Type != bus.Modified || evs[10].PreviousRevision != evs[0].Revision || len(evs[10].Previous) != 0 {
		t.Errorf("types/previous wrong: %s, %s previous revision %d (want %d) previous state %s (want none)",
			evs[0].Type, evs[10].Type, evs[10].PreviousRevision, evs[0].Revision, evs[10].Previous)
	}
	if evs[50].Group != "apps" || evs[50].Resource != "deployments" || evs[50].Namespace != "default" {
		t.Errorf("key parsed wrong: %+v", evs[50])
	}
}

func TestPublishResumesWithoutDuplicates(t *testing.T) {
	_, js := startNATS(t)
	src := newFakeSource()
	for i := 0; i < 20; i++ {
		src.put(fmt.Sprintf("/registry/core/pods/ns/p%d", i), `{}`)
	}
	stop := runPublisher(t, src, alwaysLeader{}, js)
	historyRevisions(t, js, 20)
	stop()
	for i := 0; i < 20; i++ {
		src.put(fmt.Sprintf("/registry/core/pods/ns/q%d", i), `{}`)
	}
	stop = runPublisher(t, src, alwaysLeader{}, js)
	revs, _ := historyRevisions(t, js, 40)
	stop()
	if len(revs) != 40 {
		t.Fatalf("after a restart the stream holds %d revisions, want 40", len(revs))
	}
	for i, r := range revs {
		if r != int64(i+1) {
			t.Fatalf("position %d holds revision %d, want %d (duplicate or gap)", i, r, i+1)
		}
	}
}

// TestPublishFencesASecondWriter: a publisher that still believes it leads
// cannot interleave with the real leader: every revision lands once.
func TestPublishFencesASecondWriter(t *testing.T) {
	_, js := startNATS(t)
	src := newFakeSource()
	stopA := runPublisher(t, src, alwaysLeader{}, js)
	stopB := runPublisher(t, src, alwaysLeader{}, js)
	for i := 0; i < 200; i++ {
		src.put(fmt.Sprintf("/registry/core/configmaps/default/c%d", i%7), fmt.Sprintf(`{"i":%d}`, i))
	}
	revs, _ := historyRevisions(t, js, 200)
	stopA()
	stopB()
	if len(revs) != 200 {
		t.Fatalf("two publishers wrote %d messages for 200 revisions", len(revs))
	}
	for i, r := range revs {
		if r != int64(i+1) {
			t.Fatalf("position %d holds revision %d, want %d", i, r, i+1)
		}
	}
}

// TestPublishReportsACompactedRange: revisions etcd compacted before they
// were published become a GAP event, after the state stream was reseeded.
func TestPublishReportsACompactedRange(t *testing.T) {
	_, js := startNATS(t)
	src := newFakeSource()
	stop := runPublisher(t, src, alwaysLeader{}, js)
	src.put("/registry/core/configmaps/default/a", `{"v":1}`)
	src.put("/registry/core/configmaps/default/gone", `{"v":1}`)
	historyRevisions(t, js, 2)
	stop()
	// While no publisher runs, changes happen and etcd compacts them.
	src.put("/registry/core/configmaps/default/a", `{"v":2}`)
	src.mu.Lock()
	src.log = append(src.log, Change{Revision: src.rev() + 1, Key: "/registry/core/configmaps/default/gone", Delete: true, Prev: []byte(`{"v":1}`)})
	src.compacted = src.rev()
	src.mu.Unlock()
	stop = runPublisher(t, src, alwaysLeader{}, js)
	defer stop()
	var gap *bus.Event
	deadline := time.Now().Add(20 * time.Second)
	for gap == nil && time.Now().Before(deadline) {
		st, err := js.Stream(context.Background(), bus.HistoryStream)
		if err == nil {
			if m, err := st.GetLastMsgForSubject(context.Background(), bus.GapSubject); err == nil {
				gap, _ = bus.Decode(m.Data)
			}
		}
	}
	if gap == nil || gap.From != 3 || gap.To != 4 {
		t.Fatalf("gap event = %+v, want revisions 3..4", gap)
	}
	st, err := js.Stream(context.Background(), bus.StateStream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(context.Background(), "kstate.core.configmaps.default.a")
	if err != nil {
		t.Fatal(err)
	}
	var ev bus.Event
	_ = json.Unmarshal(m.Data, &ev)
	if string(ev.Object) != `{"v":2}` {
		t.Errorf("state of a after reseed = %s, want {\"v\":2}", ev.Object)
	}
	m, err = st.GetLastMsgForSubject(context.Background(), "kstate.core.configmaps.default.gone")
	if err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(m.Data, &ev)
	if ev.Type != bus.Deleted {
		t.Errorf("state of a vanished object after reseed is %s, want a DELETED tombstone", ev.Type)
	}
}

func TestObjectKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bus.ObjectKey
		ok   bool
	}{
		{"/registry/core/pods/ns/p", bus.ObjectKey{Resource: "pods", Namespace: "ns", Name: "p"}, true},
		{"/registry/core/nodes/n1", bus.ObjectKey{Resource: "nodes", Name: "n1"}, true},
		{"/registry/apps/deployments/d/x.y", bus.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "d", Name: "x.y"}, true},
		{"/registry/core/pods//p", bus.ObjectKey{}, false},
		{"/other/core/pods/ns/p", bus.ObjectKey{}, false},
		{"/registry/core", bus.ObjectKey{}, false},
	} {
		got, ok := objectKey(tc.key)
		if ok != tc.ok || got != tc.want {
			t.Errorf("objectKey(%q) = %+v, %v; want %+v, %v", tc.key, got, ok, tc.want, tc.ok)
		}
	}
}

// BenchmarkPublish measures publisher throughput: revisions per second
// written to every stream (history and state) of an embedded NATS.
func BenchmarkPublish(b *testing.B) {
	_, js := startNATS(b)
	src := newFakeSource()
	stop := runPublisher(b, src, alwaysLeader{}, js)
	defer stop()
	obj := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"},"data":{"k":"v"}}`
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		src.put(fmt.Sprintf("/registry/core/configmaps/default/cm-%d", i%1000), obj)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		st, err := js.Stream(ctx, bus.HistoryStream)
		if err == nil {
			if info, err := st.Info(ctx); err == nil && info.State.Msgs >= uint64(b.N) {
				break
			}
		}
		select {
		case <-ctx.Done():
			b.Fatalf("publisher did not catch up: %v", ctx.Err())
		case <-tick.C:
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "revisions/s")
}

// TestPublishIgnoresForeignMessages: a message without a revision on the
// history subjects (not written by a publisher) neither resets the cursor
// nor makes the publisher republish from the start.
func TestPublishIgnoresForeignMessages(t *testing.T) {
	_, js := startNATS(t)
	src := newFakeSource()
	stop := runPublisher(t, src, alwaysLeader{}, js)
	for i := 0; i < 5; i++ {
		src.put(fmt.Sprintf("/registry/core/configmaps/default/c%d", i), `{}`)
	}
	historyRevisions(t, js, 5)
	stop()
	if _, err := js.Publish(context.Background(), "kube.core.configmaps.default.stray", []byte("not an event")); err != nil {
		t.Fatal(err)
	}
	stop = runPublisher(t, src, alwaysLeader{}, js)
	defer stop()
	src.put("/registry/core/configmaps/default/after", `{}`)
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := js.Stream(context.Background(), bus.HistoryStream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs == 7 {
			m, err := st.GetMsg(context.Background(), info.State.LastSeq)
			if err != nil {
				t.Fatal(err)
			}
			if got := bus.HeaderInt(m.Header, bus.HeaderRevision); got != 6 {
				t.Fatalf("last message has revision %d, want 6", got)
			}
			return
		}
		if info.State.Msgs > 7 || time.Now().After(deadline) {
			t.Fatalf("stream holds %d messages, want 5 events + 1 stray + 1 new event (no republish)", info.State.Msgs)
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-context.Background().Done():
		}
	}
}

// No stream carries an update's previous state, only its revision: the
// history, an object's state message and its node's messages carry the
// object alone.
func TestPublishNoPreviousState(t *testing.T) {
	_, js := startNATS(t)
	src := newFakeSource()
	stop := runPublisher(t, src, alwaysLeader{}, js)
	defer stop()
	src.put("/registry/core/pods/ns/p", `{"metadata":{"name":"p","namespace":"ns"},"spec":{"nodeName":"n1"}}`)
	src.put("/registry/core/pods/ns/p", `{"metadata":{"name":"p","namespace":"ns"},"spec":{"nodeName":"n1"},"status":{"phase":"Running"}}`)
	_, evs := historyRevisions(t, js, 2)
	if len(evs) != 2 || evs[1].Type != bus.Modified || len(evs[1].Previous) != 0 || evs[1].PreviousRevision != evs[0].Revision {
		t.Fatalf("history: %d events, want the update with the previous revision and without the previous state: %+v", len(evs), evs)
	}
	k := bus.ObjectKey{Resource: "pods", Namespace: "ns", Name: "p"}
	for _, c := range []struct{ stream, subject string }{
		{bus.StateStream, bus.StateSubject(k)},
		{bus.NodePodsStream, bus.NodeSubject("n1", "ns", "p")},
		{bus.StateStream, bus.StateNodeSubject("n1", "ns", "p")},
	} {
		var ev *bus.Event
		poll(t, 10*time.Second, c.subject+" at the update's revision", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			st, err := js.Stream(ctx, c.stream)
			if err != nil {
				return false
			}
			m, err := st.GetLastMsgForSubject(ctx, c.subject)
			if err != nil {
				return false
			}
			if ev, err = bus.Decode(m.Data); err != nil {
				t.Fatalf("%s: %v", c.subject, err)
			}
			return ev.Revision == evs[1].Revision
		})
		if len(ev.Previous) != 0 || string(ev.Object) != string(evs[1].Object) {
			t.Errorf("%s: previous %s, object %s (want none, and %s)", c.subject, ev.Previous, ev.Object, evs[1].Object)
		}
	}
}

// A pod moved to another node is DELETED for the node it left, with the
// state that node last had, which no other message carries now.
func TestPublishPodLeavingANode(t *testing.T) {
	_, js := startNATS(t)
	src := newFakeSource()
	stop := runPublisher(t, src, alwaysLeader{}, js)
	defer stop()
	onN1 := `{"metadata":{"name":"p","namespace":"ns"},"spec":{"nodeName":"n1"}}`
	src.put("/registry/core/pods/ns/p", onN1)
	src.put("/registry/core/pods/ns/p", `{"metadata":{"name":"p","namespace":"ns"},"spec":{"nodeName":"n2"}}`)
	last := func(subject string, rev int64) *bus.Event { return waitNodeRev(t, js, subject, rev) }
	if ev := last(bus.NodeSubject("n1", "ns", "p"), 2); ev.Type != bus.Deleted || string(ev.Object) != onN1 {
		t.Errorf("n1 sees %s %s, want DELETED %s", ev.Type, ev.Object, onN1)
	}
	if ev := last(bus.NodeSubject("n2", "ns", "p"), 2); ev.Type != bus.Added {
		t.Errorf("n2 sees %s, want ADDED", ev.Type)
	}
}

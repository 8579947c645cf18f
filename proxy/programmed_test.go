package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/busauth"
	"github.com/kubebus/kubebus/bus/natsserver/natstest"
	"github.com/kubebus/kubebus/proxy/rules"
)

// record is one call of a fakeRecorder.
type record struct {
	rev int64
	at  time.Time
}

// fakeRecorder reports each call on calls and fails the first fail ones.
type fakeRecorder struct {
	mu    sync.Mutex
	fail  int
	calls chan record
}

func newFakeRecorder(fail int) *fakeRecorder {
	return &fakeRecorder{fail: fail, calls: make(chan record, 100)}
}

func (f *fakeRecorder) RecordProgrammed(_ context.Context, rev int64, at time.Time) error {
	f.mu.Lock()
	fail := f.fail > 0
	f.fail--
	f.mu.Unlock()
	f.calls <- record{rev, at}
	if fail {
		return errors.New("fake: the API server is away")
	}
	return nil
}

// fakeHead answers the bus's newest revision of each resource.
type fakeHead struct {
	mu     sync.Mutex
	newest map[resource]int64
	err    error
	asked  []resource
}

func (h *fakeHead) last(_ context.Context, r resource) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asked = append(h.asked, r)
	return h.newest[r], h.err
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestClaim(t *testing.T) {
	t.Parallel()
	busDown := errors.New("bus down")
	for _, tt := range []struct {
		name      string
		p         programmed
		head      *fakeHead
		want      int64
		wantAsked []resource
	}{
		{"equal revisions need no look", programmed{services: 7, slices: 7}, &fakeHead{}, 7, nil},
		{"no bus: the lower", programmed{services: 3, slices: 9}, nil, 3, nil},
		{"the quiet Services cache holds every Service event", programmed{services: 3, slices: 9},
			&fakeHead{newest: map[resource]int64{servicesResource: 3}}, 9, []resource{servicesResource}},
		{"no Service event retained on the bus", programmed{services: 3, slices: 9},
			&fakeHead{newest: map[resource]int64{}}, 9, []resource{servicesResource}},
		{"a Service event not yet in the cache", programmed{services: 3, slices: 9},
			&fakeHead{newest: map[resource]int64{servicesResource: 5}}, 3, []resource{servicesResource}},
		{"the quiet EndpointSlices cache holds every slice event", programmed{services: 12, slices: 4},
			&fakeHead{newest: map[resource]int64{slicesResource: 4}}, 12, []resource{slicesResource}},
		{"an EndpointSlice event not yet in the cache", programmed{services: 12, slices: 4},
			&fakeHead{newest: map[resource]int64{slicesResource: 11}}, 4, []resource{slicesResource}},
		{"the bus cannot be read: the lower", programmed{services: 3, slices: 9},
			&fakeHead{newest: map[resource]int64{servicesResource: 3}, err: busDown}, 3, []resource{servicesResource}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var head busHead
			if tt.head != nil {
				head = tt.head
			}
			if got := claim(context.Background(), head, tt.p, quiet()); got != tt.want {
				t.Errorf("claim = %d, want %d", got, tt.want)
			}
			if tt.head != nil && !equalResources(tt.head.asked, tt.wantAsked) {
				t.Errorf("asked the bus about %v, want %v", tt.head.asked, tt.wantAsked)
			}
		})
	}
}

func equalResources(a, b []resource) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// startRecorder runs a recorder on a fake clock until the test ends.
func startRecorder(t *testing.T, rec Recorder, head busHead) (*recorder, *clocktesting.FakeClock) {
	t.Helper()
	r := newRecorder(rec, head, quiet())
	fc := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	r.clock = fc
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return r, fc
}

func nextRecord(t *testing.T, f *fakeRecorder) record {
	t.Helper()
	select {
	case r := <-f.calls:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("nothing recorded")
		return record{}
	}
}

// noRecord checks that nothing is recorded for a while (the recorder
// works on real goroutines: a stray record shows within it).
func noRecord(t *testing.T, f *fakeRecorder) {
	t.Helper()
	select {
	case r := <-f.calls:
		t.Fatalf("recorded %+v, want nothing", r)
	case <-time.After(100 * time.Millisecond):
	}
}

// waitForTimer waits until the recorder waits on the fake clock.
func waitForTimer(t *testing.T, fc *clocktesting.FakeClock) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !fc.HasWaiters(); {
		if time.Now().After(deadline) {
			t.Fatal("the recorder does not wait on the clock")
		}
		time.Sleep(time.Millisecond)
	}
}

func waitRecorded(t *testing.T, r *recorder, rev int64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); r.recorded.Load() != rev; {
		if time.Now().After(deadline) {
			t.Fatalf("recorded revision %d, want %d", r.recorded.Load(), rev)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRecorderRecordsAdvancesOnly: a sync is recorded when its revisions
// go beyond what is recorded, and only then.
func TestRecorderRecordsAdvancesOnly(t *testing.T) {
	t.Parallel()
	f := newFakeRecorder(0)
	r, fc := startRecorder(t, f, nil)
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	r.offer(programmed{services: 5, slices: 5, at: at})
	if got := nextRecord(t, f); got.rev != 5 || !got.at.Equal(at) {
		t.Fatalf("recorded %+v, want revision 5 at %v", got, at)
	}
	waitRecorded(t, r, 5)
	// The same revisions again, or older ones: nothing to record, even
	// once the interval passed.
	r.offer(programmed{services: 5, slices: 5, at: at.Add(time.Second)})
	r.offer(programmed{services: 3, slices: 4, at: at.Add(2 * time.Second)})
	if r.take() != nil {
		t.Fatal("a sync that brings nothing new is pending")
	}
	fc.Step(time.Hour)
	noRecord(t, f)
	// A change after a quiet while is recorded at once.
	r.offer(programmed{services: 6, slices: 6, at: at.Add(3 * time.Second)})
	if got := nextRecord(t, f); got.rev != 6 {
		t.Fatalf("recorded revision %d, want 6", got.rev)
	}
}

// TestRecorderCoalesces: at most one record per interval; the syncs
// offered meanwhile make one trailing record, of the latest.
func TestRecorderCoalesces(t *testing.T) {
	t.Parallel()
	f := newFakeRecorder(0)
	r, fc := startRecorder(t, f, nil)
	t0 := fc.Now()
	r.offer(programmed{services: 5, slices: 5, at: t0})
	if got := nextRecord(t, f); got.rev != 5 {
		t.Fatalf("first record: revision %d, want 5 at once", got.rev)
	}
	waitRecorded(t, r, 5)
	r.offer(programmed{services: 6, slices: 6, at: t0.Add(time.Millisecond)})
	r.offer(programmed{services: 6, slices: 7, at: t0.Add(2 * time.Millisecond)})
	waitForTimer(t, fc)
	r.offer(programmed{services: 8, slices: 8, at: t0.Add(3 * time.Millisecond)})
	noRecord(t, f) // within the interval
	fc.Step(recordInterval - time.Millisecond)
	noRecord(t, f)
	fc.Step(time.Millisecond)
	if got := nextRecord(t, f); got.rev != 8 || !got.at.Equal(t0.Add(3*time.Millisecond)) {
		t.Fatalf("trailing record %+v, want the latest sync's revision 8", got)
	}
	waitRecorded(t, r, 8)
	fc.Step(time.Hour)
	noRecord(t, f) // the coalesced syncs make no further records
}

// TestRecorderRetries: a failed record is retried with backoff without a
// new sync, and the retry records the latest state.
func TestRecorderRetries(t *testing.T) {
	t.Parallel()
	f := newFakeRecorder(2)
	r, fc := startRecorder(t, f, nil)
	r.offer(programmed{services: 5, slices: 5, at: fc.Now()})
	if got := nextRecord(t, f); got.rev != 5 {
		t.Fatalf("first attempt: revision %d", got.rev)
	}
	waitForTimer(t, fc) // fails; retried after the interval
	fc.Step(recordInterval)
	if got := nextRecord(t, f); got.rev != 5 {
		t.Fatalf("second attempt: revision %d", got.rev)
	}
	// Fails again: the wait doubles. A sync meanwhile is what the retry
	// records.
	waitForTimer(t, fc)
	r.offer(programmed{services: 5, slices: 9, at: fc.Now()})
	fc.Step(recordInterval)
	noRecord(t, f)
	fc.Step(recordInterval)
	if got := nextRecord(t, f); got.rev != 5 {
		// No bus to check the lagging Services cache against: the lower.
		t.Fatalf("third attempt: revision %d, want 5", got.rev)
	}
	waitRecorded(t, r, 5)
	if r.take() != nil {
		t.Error("the recorded sync is still pending")
	}
}

// TestRecorderChecksTheLaggingCache: the revision recorded goes past the
// quiet cache's only once the bus shows it holds every event.
func TestRecorderChecksTheLaggingCache(t *testing.T) {
	t.Parallel()
	f := newFakeRecorder(0)
	head := &fakeHead{newest: map[resource]int64{servicesResource: 4}}
	r, fc := startRecorder(t, f, head)
	r.offer(programmed{services: 3, slices: 9, at: fc.Now()})
	if got := nextRecord(t, f); got.rev != 3 {
		t.Fatalf("recorded %d, want 3 while a Service event is missing from the cache", got.rev)
	}
	waitRecorded(t, r, 3)
	// The Services cache caught up.
	head.mu.Lock()
	head.newest[servicesResource] = 4
	head.mu.Unlock()
	r.offer(programmed{services: 4, slices: 9, at: fc.Now()})
	waitForTimer(t, fc)
	fc.Step(recordInterval)
	if got := nextRecord(t, f); got.rev != 9 {
		t.Fatalf("recorded %d, want 9 once the Services cache holds every event", got.rev)
	}
}

// TestSyncOffersTheRevisionsReadBeforeTheRules: the revisions recorded
// are the caches' before the lists the rules are built from (a change
// applied in between is in the rules, but not claimed).
func TestSyncOffersTheRevisionsReadBeforeTheRules(t *testing.T) {
	t.Parallel()
	svcs := &fakeCache[*corev1.Service]{synced: make(chan struct{}), rev: 10}
	sls := &fakeCache[*discoveryv1.EndpointSlice]{synced: make(chan struct{}), rev: 12}
	svcs.onList = func() { svcs.setRevision(20) }
	sls.onList = func() { sls.setRevision(21) }
	app := &fakeApplier{appliedc: make(chan applied, 10), synced: func() bool { return true }}
	p := &proxy{cfg: Config{Applier: app, Families: []rules.Family{rules.IPv4}, Logger: quiet()},
		services: svcs, slices: sls, changes: make(chan struct{}, 1), metrics: newMetrics(prometheus.NewRegistry()),
		recorder: newRecorder(newFakeRecorder(0), nil, quiet())}
	before := time.Now()
	if err := p.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := p.recorder.take()
	if got == nil {
		t.Fatal("the sync offered nothing")
	}
	if got.services != 10 || got.slices != 12 {
		t.Errorf("offered revisions services=%d slices=%d, want 10 and 12 (read before the lists)", got.services, got.slices)
	}
	if got.at.Before(before) || got.at.After(time.Now()) {
		t.Errorf("offered time %v is not the sync's end", got.at)
	}
	// A failed sync offers nothing.
	app.fail = 1
	if err := p.sync(context.Background()); err == nil {
		t.Fatal("the sync did not fail")
	}
	if got := p.recorder.take(); got != nil {
		t.Errorf("a failed sync offered %+v", got)
	}
}

// TestLoopRecordsProgrammed: the running loop records the revision of
// what it programmed, and a later change's.
func TestLoopRecordsProgrammed(t *testing.T) {
	t.Parallel()
	svcs := &fakeCache[*corev1.Service]{synced: make(chan struct{}), rev: 4}
	sls := &fakeCache[*discoveryv1.EndpointSlice]{synced: make(chan struct{}), rev: 4}
	svcs.set(service("a", "10.96.0.1"))
	close(svcs.synced)
	close(sls.synced)
	app := &fakeApplier{appliedc: make(chan applied, 100), synced: func() bool { return true }}
	f := newFakeRecorder(0)
	p := &proxy{cfg: Config{Applier: app, MinSyncPeriod: time.Millisecond, SyncPeriod: time.Hour, Families: []rules.Family{rules.IPv4}, Logger: quiet()},
		services: svcs, slices: sls, changes: make(chan struct{}, 1), metrics: newMetrics(prometheus.NewRegistry())}
	head := &fakeHead{newest: map[resource]int64{servicesResource: 4}}
	p.recorder = newRecorder(f, head, quiet())
	p.recorder.interval = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.recorder.run(ctx)
	done := make(chan error, 1)
	go func() { done <- p.loop(ctx) }()
	go func() { // drain the applies
		for range app.appliedc {
		}
	}()
	if got := nextRecord(t, f); got.rev != 4 {
		t.Fatalf("recorded %d, want 4", got.rev)
	}
	// An EndpointSlice change: the Services cache is quiet but holds
	// every Service event, so the slice's revision is recorded.
	sls.setRevision(9)
	p.changed(time.Now())
	if got := nextRecord(t, f); got.rev != 9 {
		t.Fatalf("recorded %d, want 9", got.rev)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("loop: %v", err)
	}
}

// TestHistoryHead reads the newest Service and EndpointSlice events of a
// real bus as the proxy's bus identity.
func TestHistoryHead(t *testing.T) {
	t.Parallel()
	s := natstest.Start(t)
	_, pub := s.Connect(t, busauth.PublisherUser)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := bus.EnsureStreams(ctx, pub, bus.StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	_, js := s.Connect(t, busauth.ProxyUser)
	h := &historyHead{js: js}
	for _, r := range []resource{servicesResource, slicesResource} {
		if got, err := h.last(ctx, r); err != nil || got != 0 {
			t.Fatalf("empty bus: last(%d) = %d, %v; want 0", r, got, err)
		}
	}
	publish := func(k bus.ObjectKey, rev int64) {
		t.Helper()
		m := nats.NewMsg(bus.HistorySubject(k))
		m.Header.Set(bus.HeaderRevision, strconv.FormatInt(rev, 10))
		if _, err := pub.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	publish(bus.ObjectKey{Resource: "services", Namespace: "default", Name: "a"}, 5)
	publish(bus.ObjectKey{Group: "discovery.k8s.io", Resource: "endpointslices", Namespace: "default", Name: "a-1"}, 6)
	publish(bus.ObjectKey{Resource: "services", Namespace: "kube-system", Name: "b"}, 7)
	publish(bus.ObjectKey{Resource: "pods", Namespace: "default", Name: "p"}, 8)
	publish(bus.ObjectKey{Group: "discovery.k8s.io", Resource: "endpointslices", Namespace: "other", Name: "x-1"}, 9)
	publish(bus.ObjectKey{Resource: "servicesx", Namespace: "default", Name: "c"}, 10)
	for r, want := range map[resource]int64{servicesResource: 7, slicesResource: 9} {
		if got, err := h.last(ctx, r); err != nil || got != want {
			t.Errorf("last(%d) = %d, %v; want %d", r, got, err, want)
		}
	}
}

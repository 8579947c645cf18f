package stages

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/busauth"
	"github.com/kubebus/kubebus/bus/lifecycle"
	"github.com/kubebus/kubebus/bus/natsserver/natstest"
)

// publisher writes events to KUBE_HISTORY as bus/publish does (subject,
// headers, message ID) and reads back when the stream stored each.
type publisher struct {
	t  *testing.T
	js jetstream.JetStream
}

// publish appends e's event and returns the time the stream stored it.
func (p *publisher) publish(e Event) time.Time {
	p.t.Helper()
	ev := bus.Event{Type: e.Type, Revision: e.Revision, Group: e.Key.Group, Resource: e.Key.Resource,
		Namespace: e.Key.Namespace, Name: e.Key.Name}
	var obj any
	switch {
	case e.Pod != nil:
		obj = e.Pod
	case e.Slice != nil:
		obj = e.Slice
	case e.Lease != nil:
		obj = e.Lease
	}
	subject, id := bus.GapSubject, "r"+strconv.FormatInt(e.Revision, 10)+"/gap"
	if e.Type == bus.Gap {
		ev.From, ev.To = e.Revision, e.Revision
	} else {
		raw, err := json.Marshal(obj)
		if err != nil {
			p.t.Fatal(err)
		}
		ev.Object = raw
		subject, id = bus.HistorySubject(ev.Key()), "r"+strconv.FormatInt(e.Revision, 10)
	}
	data, err := json.Marshal(&ev)
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := bus.Decode(data); err != nil {
		p.t.Fatalf("test event is malformed: %v", err)
	}
	m := nats.NewMsg(subject)
	m.Data = data
	m.Header.Set(bus.HeaderRevision, strconv.FormatInt(ev.Revision, 10))
	m.Header.Set(bus.HeaderType, string(ev.Type))
	if ev.Resource != "" {
		m.Header.Set(bus.HeaderResource, ev.Key().GroupResource())
	}
	ctx := context.Background()
	ack, err := p.js.PublishMsg(ctx, m, jetstream.WithMsgID(id))
	if err != nil {
		p.t.Fatalf("publishing revision %d: %v", ev.Revision, err)
	}
	st, err := p.js.Stream(ctx, bus.HistoryStream)
	if err != nil {
		p.t.Fatal(err)
	}
	stored, err := st.GetMsg(ctx, ack.Sequence)
	if err != nil {
		p.t.Fatal(err)
	}
	time.Sleep(3 * time.Millisecond) // every step takes some time
	return stored.Time
}

type hist struct {
	count uint64
	sum   float64
}

// stageHists reads the stage histograms from reg.
func stageHists(t *testing.T, reg prometheus.Gatherer) map[string]hist {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]hist{}
	for _, mf := range mfs {
		if mf.GetName() != "kubebus_pod_stage_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "stage" {
					out[l.GetValue()] = hist{m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()}
				}
			}
		}
	}
	return out
}

// dropped reads the dropped pods counters from reg.
func dropped(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "kubebus_pod_stage_pods_dropped_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	return out
}

// waitFor polls cond for up to 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// waitForReader waits until a consumer reading new messages is on
// KUBE_HISTORY: Run's, after it (re)opened the stream.
func waitForReader(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	waitFor(t, "the stage reader's consumer", func() bool {
		st, err := js.Stream(context.Background(), bus.HistoryStream)
		if err != nil {
			return false
		}
		l := st.ListConsumers(context.Background())
		found := false
		for ci := range l.Info() {
			found = found || ci.Config.DeliverPolicy == jetstream.DeliverNewPolicy || ci.Config.DeliverPolicy == jetstream.DeliverByStartTimePolicy
		}
		return found && l.Err() == nil
	})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// lifecycleSteps publishes pod name going from created to programmed by node-1's
// proxy, from revision rev on, with a Deployment and a kubelet Lease
// (which Run does not read) among them, the proxy Lease programmed 123 ms
// after the EndpointSlice was stored. It returns the expected stage
// durations, from the times the stream stored the events.
func lifecycleSteps(t *testing.T, p *publisher, rev int64, name string) map[string]time.Duration {
	t.Helper()
	times := map[lifecycle.Step]time.Time{}
	for i, s := range lifecycle.PodSteps {
		typ := bus.Modified
		if i == 0 {
			typ = bus.Added
		}
		times[s] = p.publish(podEv(typ, rev, 0, name, s))
		rev++
		if i == 1 { // noise
			p.publish(Event{Type: bus.Added, Revision: rev, Key: bus.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "default", Name: name},
				Pod: podStep(name, lifecycle.Created)})
			kubelet := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: lifecycle.ProxyLeaseNamespace}}
			p.publish(Event{Type: bus.Modified, Revision: rev + 1, Lease: kubelet,
				Key: bus.ObjectKey{Group: coordinationGroup, Resource: "leases", Namespace: kubelet.Namespace, Name: kubelet.Name}})
			rev += 2
		}
	}
	sl := slice(rev, 0, name)
	sl.Slice.Name = "svc-" + name
	sl.Key.Name = sl.Slice.Name
	sliceRev := rev
	times[lifecycle.InEndpoints] = p.publish(sl)
	rev++
	programmed := times[lifecycle.InEndpoints].Add(123 * time.Millisecond)
	l := lease(bus.Modified, rev, 0, "node-1", sliceRev, 0)
	lifecycle.SetProgrammed(l.Lease, sliceRev, programmed)
	p.publish(l)
	times[lifecycle.Programmed] = programmed
	want := map[string]time.Duration{}
	for _, s := range Stages {
		want[s.String()] = times[s.To].Sub(times[s.From])
	}
	return want
}

func TestRunIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts an embedded NATS server")
	}
	ns := natstest.Start(t)
	_, pubJS := ns.Connect(t, busauth.PublisherUser)
	if err := bus.EnsureStreams(context.Background(), pubJS, bus.StreamLimits{MaxBytes: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	p := &publisher{t: t, js: pubJS}
	// Events before Run starts are not read.
	p.publish(added(1, 0, "old", lifecycle.Created))
	// The API server reads with its own connection, as the publisher.
	_, js := ns.Connect(t, busauth.PublisherUser)
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{JetStream: js, Registerer: reg, CheckEvery: 100 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	}()
	waitForReader(t, js)
	p.publish(modified(2, 0, "old", lifecycle.Ready)) // not seen created: not followed
	p.publish(lease(bus.Added, 3, 0, "node-1", 2, 0)) // the proxy starts

	want := lifecycleSteps(t, p, 10, "web-1")
	check := func(n uint64, want map[string]time.Duration) {
		t.Helper()
		waitFor(t, "the observations", func() bool {
			return stageHists(t, reg)["endpoints_programmed"].count >= n
		})
		got := stageHists(t, reg)
		for _, s := range Stages {
			h := got[s.String()]
			if h.count != n || math.Abs(h.sum-want[s.String()].Seconds()) > 1e-6 {
				t.Errorf("stage %s: %d observations summing %gs, want %d summing %gs", s, h.count, h.sum, n, want[s.String()].Seconds())
			}
		}
	}
	check(1, want)

	// A pod that is only created when the stream is created again
	// is dropped, and the reader follows the new stream.
	p.publish(added(40, 0, "stuck", lifecycle.Created))
	waitFor(t, "the stuck pod", func() bool { return stageHists(t, reg)["created_scheduled"].count == 1 })
	time.Sleep(100 * time.Millisecond)
	if err := pubJS.DeleteStream(context.Background(), bus.HistoryStream); err != nil {
		t.Fatal(err)
	}
	if err := bus.EnsureStreams(context.Background(), pubJS, bus.StreamLimits{MaxBytes: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	waitForReader(t, js)
	// The proxy, unknown to the cleared tracker, programs a revision
	// before the new pod's EndpointSlice.
	p.publish(lease(bus.Modified, 49, 0, "node-1", 45, 0))
	more := lifecycleSteps(t, p, 50, "web-2")
	for s, d := range more {
		want[s] += d
	}
	check(2, want)
	if got := dropped(t, reg); !reflect.DeepEqual(got, map[string]float64{"capacity": 0, "gap": 1, "stale": 0}) {
		t.Errorf("pods dropped: %v, want one by the gap", got)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run returned %v after its context ended", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func TestRunRefusesDoubleRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Run(ctx, Config{JetStream: fakeJS{}, Registerer: reg})
	var already prometheus.AlreadyRegisteredError
	if !errors.As(err, &already) {
		t.Errorf("Run with the metrics registered already: %v, want AlreadyRegisteredError", err)
	}
	if err := Run(ctx, Config{Registerer: prometheus.NewRegistry()}); err == nil {
		t.Error("Run without a JetStream connection did not fail")
	}
}

// fakeJS is a JetStream that is never called.
type fakeJS struct{ jetstream.JetStream }

// TestReaderResumes: a reader that stops (the bus was unreachable)
// resumes after the last message it read, or starts again when the
// stream lost messages it had not read or was created again.
func TestReaderResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts an embedded NATS server")
	}
	ns := natstest.Start(t)
	_, js := ns.Connect(t, busauth.PublisherUser)
	if err := bus.EnsureStreams(context.Background(), js, bus.StreamLimits{MaxBytes: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	p := &publisher{t: t, js: js}
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	r := &reader{js: js, log: slog.New(slog.NewTextHandler(testWriter{t}, nil)), every: 50 * time.Millisecond, t: NewTracker(Limits{}), m: m}
	// follow runs the reader until cond holds.
	follow := func(what string, cond func() bool) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := r.follow(ctx)
			done <- err
		}()
		waitFor(t, what, func() bool { return cond() || len(done) > 0 })
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("%s: follow: %v", what, err)
		}
	}
	count := func(stage string) uint64 { return stageHists(t, reg)[stage].count }

	// As if it had read the stream up to now.
	st, err := js.Stream(context.Background(), bus.HistoryStream)
	if err != nil {
		t.Fatal(err)
	}
	r.born = st.CachedInfo().Created
	p.publish(added(10, 0, "a", lifecycle.Scheduled))
	follow("a followed", func() bool { return count("created_scheduled") == 1 })
	// Published while the reader is away: read when it resumes.
	p.publish(modified(11, 0, "a", lifecycle.Sandbox))
	follow("a's sandbox", func() bool { return count("scheduled_sandbox") == 1 })

	// Lost while the reader is away: the tracker starts again.
	p.publish(modified(12, 0, "a", lifecycle.Started))
	if err := st.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	follow("the purge noticed", func() bool { return dropped(t, reg)["gap"] == 1 })
	if n := count("sandbox_started"); n != 0 {
		t.Errorf("%d sandbox_started observations of a purged event", n)
	}

	// The stream deleted and created again while the reader reads it:
	// follow returns (its consumer fails, or the check below notices),
	// and the next follow starts again on the new stream.
	p.publish(added(20, 0, "b", lifecycle.Scheduled))
	follow("b followed", func() bool { return count("created_scheduled") == 2 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := r.follow(ctx)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := js.DeleteStream(context.Background(), bus.HistoryStream); err != nil {
		t.Fatal(err)
	}
	if err := bus.EnsureStreams(context.Background(), js, bus.StreamLimits{MaxBytes: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Logf("follow on the deleted stream returned %v", err)
		if err == nil {
			t.Error("follow on the deleted stream returned nil")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not notice the stream was created again")
	}
	// Had the ordered consumer followed the stream onto the new one (at
	// the sequence after the last it read), check notices.
	if err := r.check(context.Background(), st); !errors.Is(err, errRecreated) {
		t.Errorf("check after the stream was created again: %v, want errRecreated", err)
	}
	follow("the new stream noticed", func() bool { return dropped(t, reg)["gap"] == 2 })
	p.publish(added(30, 0, "c", lifecycle.Scheduled))
	follow("reading the new stream", func() bool { return count("created_scheduled") == 3 })
}

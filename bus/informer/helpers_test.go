package informer

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/busauth"
	"github.com/kubebus/kubebus/bus/natsserver"
	"github.com/kubebus/kubebus/bus/natsserver/natstest"
	"github.com/kubebus/kubebus/bus/publish"
	"github.com/kubebus/kubebus/internal/storedobj"
)

// testLogger is quiet unless INFORMER_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("INFORMER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// testNATS is an embedded NATS server that can be restarted on the same
// port and store directory.
type testNATS struct {
	t     testing.TB
	dir   string
	port  int
	srv   *natsserver.Server
	tls   *tls.Config
	creds bus.Credentials
	ca    *natstest.CA
}

func startNATS(t testing.TB) *testNATS {
	t.Helper()
	n := &testNATS{t: t, dir: t.TempDir(), port: -1}
	// The publisher's role may do everything the tests do.
	ca := natstest.NewCA(t)
	n.tls, n.creds, n.ca = ca.TLS, ca.Creds(t, busauth.PublisherUser), ca
	n.start()
	u, err := url.Parse(n.srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	if n.port, err = strconv.Atoi(u.Port()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.stop)
	return n
}

func (n *testNATS) start() {
	n.t.Helper()
	s, err := natsserver.Start(natsserver.Config{StoreDir: n.dir, Port: n.port, TLS: n.tls, Logger: testLogger()})
	if err != nil {
		n.t.Fatal(err)
	}
	n.srv = s
}

func (n *testNATS) stop() {
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv = nil
	}
}

func (n *testNATS) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }

// connect opens a reconnecting connection and makes sure the streams exist.
func (n *testNATS) connect(ctx context.Context) jetstream.JetStream {
	n.t.Helper()
	nc, js, err := bus.Connect(n.url(), n.t.Name(), n.creds)
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(nc.Close)
	if err := bus.EnsureStreams(ctx, js, bus.StreamLimits{}); err != nil {
		n.t.Fatal(err)
	}
	return js
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not a wait for an effect
	}
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// pod builds a stored pod (no resourceVersion).
func pod(ns, name, node string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls, UID: types.UID("uid-" + ns + "-" + name)},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
			Env: []corev1.EnvVar{{Name: "MODE", Value: "test"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

func podKey(ns, name string) string { return "/registry/core/pods/" + ns + "/" + name }

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newPodInformer(t testing.TB, js jetstream.JetStream, cfg Config[*corev1.Pod]) *Informer[*corev1.Pod] {
	t.Helper()
	cfg.JetStream = js
	cfg.Resource = "pods"
	cfg.New = func() *corev1.Pod { return &corev1.Pod{} }
	if cfg.Component == "" {
		cfg.Component = "test"
	}
	if cfg.CheckInterval == 0 {
		cfg.CheckInterval = 100 * time.Millisecond
	}
	if cfg.Indexers == nil {
		cfg.Indexers = map[string]IndexFunc[*corev1.Pod]{"spec.nodeName": func(p *corev1.Pod) []string { return []string{p.Spec.NodeName} }}
	}
	cfg.Logger = testLogger()
	inf, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return inf
}

// runInformer runs inf until the returned stop function is called (or the
// test ends) and fails the test if Run returns an error.
func runInformer(t testing.TB, ctx context.Context, inf *Informer[*corev1.Pod]) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := inf.Run(ctx); err != nil {
			t.Errorf("informer: %v", err)
		}
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return sync.OnceFunc(stop)
}

// recorder is a handler that replays the events into its own view of the
// objects (key -> resourceVersion) and notes any event that does not fit
// that view.
type recorder struct {
	mu                     sync.Mutex
	view                   map[string]string
	adds, updates, deletes int
	problems               []string
}

func newRecorder() *recorder { return &recorder{view: map[string]string{}} }

func key(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func (r *recorder) OnAdd(p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.adds++
	if _, ok := r.view[key(p)]; ok {
		r.problems = append(r.problems, "add of a known object "+key(p))
	}
	r.view[key(p)] = p.ResourceVersion
}

func (r *recorder) OnUpdate(old, p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates++
	if rv, ok := r.view[key(p)]; !ok || rv != old.ResourceVersion {
		r.problems = append(r.problems, fmt.Sprintf("update of %s from %s, view has %q", key(p), old.ResourceVersion, rv))
	}
	if a, _ := strconv.Atoi(old.ResourceVersion); a >= mustAtoi(p.ResourceVersion) {
		r.problems = append(r.problems, fmt.Sprintf("update of %s goes back from %s to %s", key(p), old.ResourceVersion, p.ResourceVersion))
	}
	r.view[key(p)] = p.ResourceVersion
}

func (r *recorder) OnDelete(p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deletes++
	if _, ok := r.view[key(p)]; !ok {
		r.problems = append(r.problems, "delete of an unknown object "+key(p))
	}
	delete(r.view, key(p))
}

func (r *recorder) snapshot() (map[string]string, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.view), slices.Clone(r.problems)
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// cacheView is the informer's cache as key -> resourceVersion.
func cacheView(inf *Informer[*corev1.Pod]) map[string]string {
	out := map[string]string{}
	for _, p := range inf.List() {
		out[key(p)] = p.ResourceVersion
	}
	return out
}

// ---- a fake etcd for the real publisher ----

type kv struct {
	value []byte
	rev   int64
}

// fakeEtcd is an in-memory keyspace with a change log; it is the
// publisher's Source.
type fakeEtcd struct {
	mu        sync.Mutex
	rev       int64
	kvs       map[string]kv
	log       []publish.Change
	compacted int64         // watches from before this revision fail
	changed   chan struct{} // closed and replaced on every change
}

var _ publish.Source = (*fakeEtcd)(nil)

func newFakeEtcd() *fakeEtcd {
	return &fakeEtcd{rev: 1, kvs: map[string]kv{}, changed: make(chan struct{})}
}

// Revision returns the current revision.
func (f *fakeEtcd) Revision(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rev, nil
}

func (f *fakeEtcd) commit(c publish.Change) int64 {
	f.rev++
	c.Revision = f.rev
	f.log = append(f.log, c)
	close(f.changed)
	f.changed = make(chan struct{})
	return f.rev
}

// put creates or updates a key and returns the revision.
func (f *fakeEtcd) put(key string, value []byte) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.kvs[key]
	rev := f.commit(publish.Change{Key: key, Value: value, Prev: old.value, PrevRevision: old.rev})
	f.kvs[key] = kv{value, rev}
	return rev
}

// del deletes a key (which must exist) and returns the revision.
func (f *fakeEtcd) del(key string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.kvs[key]
	rev := f.commit(publish.Change{Key: key, Delete: true, Prev: old.value, PrevRevision: old.rev})
	delete(f.kvs, key)
	return rev
}

// compact forgets the history up to the current revision.
func (f *fakeEtcd) compact() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.compacted = f.rev
	f.log = nil
}

// pods returns the current pods as namespace/name -> revision.
func (f *fakeEtcd) pods() map[string]string { return f.podsOn("*") }

// podsOn returns the current pods bound to node ("*": all).
func (f *fakeEtcd) podsOn(node string) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for k, v := range f.kvs {
		var p corev1.Pod
		if storedobj.Decode(v.value, &p) == nil && k == podKey(p.Namespace, p.Name) && (node == "*" || p.Spec.NodeName == node) {
			out[key(&p)] = strconv.FormatInt(v.rev, 10)
		}
	}
	return out
}

func (f *fakeEtcd) revision() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rev
}

func (f *fakeEtcd) Changes(ctx context.Context, from int64) (<-chan publish.Change, func() error) {
	ch := make(chan publish.Change, 64)
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		defer close(ch)
		next := from
		for {
			f.mu.Lock()
			if next < f.compacted {
				f.mu.Unlock()
				err = publish.ErrCompacted
				return
			}
			var batch []publish.Change
			for _, c := range f.log {
				if c.Revision >= next {
					batch = append(batch, c)
				}
			}
			wake := f.changed
			f.mu.Unlock()
			for _, c := range batch {
				select {
				case ch <- c:
					next = c.Revision + 1
				case <-ctx.Done():
					err = ctx.Err()
					return
				}
			}
			if len(batch) > 0 {
				continue
			}
			select {
			case <-wake:
			case <-ctx.Done():
				err = ctx.Err()
				return
			}
		}
	}()
	return ch, func() error { <-done; return err }
}

func (f *fakeEtcd) Snapshot(context.Context) (int64, []publish.KeyValue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []publish.KeyValue
	for k, v := range f.kvs {
		out = append(out, publish.KeyValue{Key: k, Value: v.value, Revision: v.rev})
	}
	slices.SortFunc(out, func(a, b publish.KeyValue) int { return int(a.Revision - b.Revision) })
	return f.rev, out, nil
}

// alwaysLeader is an Elector that wins at once and never loses.
type alwaysLeader struct{}

func (alwaysLeader) Campaign(context.Context) (<-chan struct{}, func(context.Context) error, error) {
	return make(chan struct{}), func(context.Context) error { return nil }, nil
}

// runPublisher runs the real publisher on src until the returned function
// is called (or the test ends).
func runPublisher(t testing.TB, ctx context.Context, js jetstream.JetStream, src publish.Source) (stop func()) {
	t.Helper()
	p, err := publish.New(publish.Config{Source: src, Elector: alwaysLeader{}, JetStream: js, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	// No deadline: the publisher bounds a publish by its context's deadline
	// when there is one, and a publish lost in a NATS restart would wait
	// for the whole test.
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(ctx)
	}()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return stop
}

// waitPublished waits until KUBE_HISTORY holds revision rev.
func waitPublished(t testing.TB, ctx context.Context, js jetstream.JetStream, rev int64) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprint("revision ", rev, " on the bus"), func() bool {
		st, err := js.Stream(ctx, bus.HistoryStream)
		if err != nil {
			return false
		}
		info, err := st.Info(ctx)
		if err != nil || info.State.LastSeq == 0 {
			return false
		}
		msg, err := st.GetMsg(ctx, info.State.LastSeq)
		return err == nil && bus.HeaderInt(msg.Header, bus.HeaderRevision) >= rev
	})
}

// ---- a hand publisher for fault injection ----

// busWriter writes pod events with the subjects and headers the publisher
// writes, and can drop any of them on purpose.
type busWriter struct {
	t      testing.TB
	js     jetstream.JetStream
	rev    int64
	chains map[string]int64 // chain filter -> revision of its last event
	state  map[string][]byte
	revs   map[string]int64 // namespace/name -> revision of the live objects
}

func newBusWriter(t testing.TB, js jetstream.JetStream) *busWriter {
	return &busWriter{t: t, js: js, rev: 100, chains: map[string]int64{}, state: map[string][]byte{}, revs: map[string]int64{}}
}

type writeOpt int

const (
	// lose drops the history (and node) messages but advances the chains:
	// a message the publisher wrote and the informer never saw.
	lose writeOpt = iota + 1
)

func eventMsg(subject string, ev *bus.Event, data []byte, chainPrev int64) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = data
	m.Header.Set(bus.HeaderRevision, strconv.FormatInt(ev.Revision, 10))
	m.Header.Set(bus.HeaderType, string(ev.Type))
	if ev.Resource != "" {
		m.Header.Set(bus.HeaderResource, ev.Key().GroupResource())
	}
	m.Header.Set(bus.HeaderChainPrev, strconv.FormatInt(chainPrev, 10))
	return m
}

// put writes ADDED or MODIFIED for p and returns the revision.
func (w *busWriter) put(ctx context.Context, p *corev1.Pod, opts ...writeOpt) int64 {
	typ := bus.Added
	if _, ok := w.state[key(p)]; ok {
		typ = bus.Modified
	}
	data := mustJSON(w.t, p)
	w.state[key(p)] = data
	rev := w.write(ctx, typ, p.Namespace, p.Name, p.Spec.NodeName, data, slices.Contains(opts, lose))
	w.revs[key(p)] = rev
	return rev
}

// del writes DELETED for p.
func (w *busWriter) del(ctx context.Context, p *corev1.Pod, opts ...writeOpt) int64 {
	data := w.state[key(p)]
	delete(w.state, key(p))
	delete(w.revs, key(p))
	return w.write(ctx, bus.Deleted, p.Namespace, p.Name, p.Spec.NodeName, data, slices.Contains(opts, lose))
}

func (w *busWriter) write(ctx context.Context, typ bus.EventType, ns, name, node string, obj []byte, lost bool) int64 {
	w.t.Helper()
	w.rev++
	k := bus.ObjectKey{Resource: "pods", Namespace: ns, Name: name}
	ev := bus.Event{Type: typ, Revision: w.rev, Resource: "pods", Namespace: ns, Name: name, Object: obj}
	data := mustJSON(w.t, &ev)
	pub := func(m *nats.Msg, opts ...jetstream.PublishOpt) {
		if _, err := w.js.PublishMsg(ctx, m, opts...); err != nil {
			w.t.Fatal(err)
		}
	}
	chain := bus.ResourceFilter("", "pods", "")
	if !lost {
		pub(eventMsg(bus.HistorySubject(k), &ev, data, w.chains[chain]))
	}
	w.chains[chain] = w.rev
	var stateOpts []jetstream.PublishOpt
	if typ == bus.Deleted {
		stateOpts = append(stateOpts, jetstream.WithMsgTTL(bus.TombstoneTTL))
	}
	if node != "" {
		nchain := bus.NodeFilter(node)
		if !lost {
			pub(eventMsg(bus.NodeSubject(node, ns, name), &ev, data, w.chains[nchain]))
		}
		w.chains[nchain] = w.rev
		pub(eventMsg(bus.StateNodeSubject(node, ns, name), &ev, data, 0), stateOpts...)
	}
	pub(eventMsg(bus.StateSubject(k), &ev, data, 0), stateOpts...)
	return w.rev
}

// view returns the objects written as namespace/name -> resourceVersion.
func (w *busWriter) view() map[string]string {
	out := map[string]string{}
	for k, rev := range w.revs {
		out[k] = strconv.FormatInt(rev, 10)
	}
	return out
}

// raw publishes a message as is.
func (w *busWriter) raw(ctx context.Context, subject string, data []byte, hdr map[string]string) {
	w.t.Helper()
	m := nats.NewMsg(subject)
	m.Data = data
	for k, v := range hdr {
		m.Header.Set(k, v)
	}
	if _, err := w.js.PublishMsg(ctx, m); err != nil {
		w.t.Fatal(err)
	}
}

// junk publishes a message on the pods chain with proper revision and
// chain headers but the body data(rev) makes.
func (w *busWriter) junk(ctx context.Context, subject string, data func(rev int64) string) {
	w.t.Helper()
	w.rev++
	chain := bus.ResourceFilter("", "pods", "")
	w.raw(ctx, subject, []byte(data(w.rev)), map[string]string{
		bus.HeaderRevision: strconv.FormatInt(w.rev, 10), bus.HeaderChainPrev: strconv.FormatInt(w.chains[chain], 10)})
	w.chains[chain] = w.rev
}

// stubJS is a JetStream whose streams cannot be opened.
type stubJS struct{ jetstream.JetStream }

func (stubJS) Stream(ctx context.Context, _ string) (jetstream.Stream, error) {
	return nil, fmt.Errorf("stub: %w", jetstream.ErrStreamNotFound)
}

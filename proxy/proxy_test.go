package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/proxy/rules"
)

type fakeCache[T any] struct {
	mu     sync.Mutex
	items  []T
	rev    int64
	synced chan struct{}
	onList func() // called by List, before it reads the items
}

func (c *fakeCache[T]) List() []T {
	if c.onList != nil {
		c.onList()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]T(nil), c.items...)
}

func (c *fakeCache[T]) Revision() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rev
}

func (c *fakeCache[T]) setRevision(rev int64) {
	c.mu.Lock()
	c.rev = rev
	c.mu.Unlock()
}

func (c *fakeCache[T]) WaitForSync(ctx context.Context) error {
	select {
	case <-c.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *fakeCache[T]) set(items ...T) {
	c.mu.Lock()
	c.items = items
	c.mu.Unlock()
}

type applied struct {
	rs     *rules.Ruleset
	synced bool
}

type fakeApplier struct {
	synced   func() bool
	fail     int // fail this many applies first
	mu       sync.Mutex
	appliedc chan applied
}

func (a *fakeApplier) Apply(_ context.Context, rs *rules.Ruleset) error {
	a.mu.Lock()
	fail := a.fail > 0
	a.fail--
	a.mu.Unlock()
	a.appliedc <- applied{rs: rs, synced: a.synced()}
	if fail {
		return errors.New("fake: apply failed")
	}
	return nil
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func service(name, ip string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: ip, ClusterIPs: []string{ip}, Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
}

func next(t *testing.T, c chan applied) applied {
	t.Helper()
	select {
	case a := <-c:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("no apply")
		return applied{}
	}
}

func TestLoopWaitsForSyncThenFollowsChanges(t *testing.T) {
	t.Parallel()
	svcs := &fakeCache[*corev1.Service]{synced: make(chan struct{})}
	sls := &fakeCache[*discoveryv1.EndpointSlice]{synced: make(chan struct{})}
	svcs.set(service("a", "10.96.0.1"))
	app := &fakeApplier{fail: 1, appliedc: make(chan applied, 10)}
	app.synced = func() bool { return isClosed(svcs.synced) && isClosed(sls.synced) }
	reg := prometheus.NewRegistry()
	cfg := Config{JetStream: nil, Applier: app, MinSyncPeriod: time.Millisecond, SyncPeriod: time.Hour,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Families: []rules.Family{rules.IPv4}}
	p := &proxy{cfg: cfg, services: svcs, slices: sls, changes: make(chan struct{}, 1), metrics: newMetrics(reg)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.loop(ctx) }()
	p.changed(time.Time{}) // a change before the caches synced programs nothing yet

	close(svcs.synced)
	close(sls.synced)
	first := next(t, app.appliedc)
	if !first.synced {
		t.Fatal("applied before both caches synced")
	}
	// The first apply failed: the loop retries and counts the failure.
	second := next(t, app.appliedc)
	if !strings.Contains(second.rs.Render(), "10.96.0.1 . tcp . 80") {
		t.Errorf("retry lacks service a:\n%s", second.rs.Render())
	}
	for deadline := time.Now().Add(30 * time.Second); value(t, p.metrics.lastSync) == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if got := value(t, p.metrics.failures); got != 1 {
		t.Errorf("sync failures = %v, want 1", got)
	}

	// A new Service and a slice with a trigger time: one more sync.
	svcs.set(service("a", "10.96.0.1"), service("b", "10.96.0.2"))
	p.changed(time.Now())
	third := next(t, app.appliedc)
	if !strings.Contains(third.rs.Render(), "10.96.0.2 . tcp . 80") {
		t.Errorf("sync after the change lacks service b:\n%s", third.rs.Render())
	}
	// The fake reports an apply before the sync records it: poll.
	for deadline := time.Now().Add(30 * time.Second); value(t, p.metrics.programming) != 1; {
		if time.Now().After(deadline) {
			t.Fatalf("network programming histogram holds %v observations, want 1", value(t, p.metrics.programming))
		}
		time.Sleep(time.Millisecond)
	}
	if got := value(t, p.metrics.lastSync); got <= 0 {
		t.Errorf("last sync timestamp = %v", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("loop: %v", err)
	}
}

// TestSyncProgramsEachFamily: a sync builds and applies one ruleset per
// configured family, each holding only that family's addresses.
func TestSyncProgramsEachFamily(t *testing.T) {
	t.Parallel()
	dual := service("dual", "10.96.0.5")
	dual.Spec.ClusterIPs = []string{"10.96.0.5", "fd00:96::5"}
	svcs := &fakeCache[*corev1.Service]{synced: make(chan struct{})}
	svcs.set(dual)
	sls := &fakeCache[*discoveryv1.EndpointSlice]{synced: make(chan struct{})}
	app := &fakeApplier{appliedc: make(chan applied, 10), synced: func() bool { return true }}
	p := &proxy{cfg: Config{Applier: app, Families: []rules.Family{rules.IPv4, rules.IPv6}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		services: svcs, slices: sls, changes: make(chan struct{}, 1), metrics: newMetrics(prometheus.NewRegistry())}
	if err := p.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	v4, v6 := next(t, app.appliedc).rs, next(t, app.appliedc).rs
	if v4.Family != rules.IPv4 || v6.Family != rules.IPv6 {
		t.Fatalf("applied families %v then %v, want ip then ip6", v4.Family, v6.Family)
	}
	if r := v4.Render(); !strings.Contains(r, "10.96.0.5 . tcp . 80") || strings.Contains(r, "fd00:96::5") {
		t.Errorf("the ip table:\n%s", r)
	}
	if r := v6.Render(); !strings.Contains(r, "fd00:96::5 . tcp . 80") || strings.Contains(r, "10.96.0.5") {
		t.Errorf("the ip6 table:\n%s", r)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]Config{
		"no bus":     {Applier: &fakeApplier{}},
		"no applier": {},
		"negative":   {Applier: &fakeApplier{}, MinSyncPeriod: -1},
	} {
		if err := c.validate(); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func TestTriggerTime(t *testing.T) {
	t.Parallel()
	want := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.EndpointsLastChangeTriggerTime: want.Format(time.RFC3339Nano)}}}
	if got := triggerTime(s); !got.Equal(want) {
		t.Errorf("triggerTime = %v, want %v", got, want)
	}
	if got := triggerTime(&discoveryv1.EndpointSlice{}); !got.IsZero() {
		t.Errorf("no annotation: %v", got)
	}
}

// value reads a counter's or gauge's value or a histogram's count.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	switch {
	case d.Counter != nil:
		return d.Counter.GetValue()
	case d.Gauge != nil:
		return d.Gauge.GetValue()
	case d.Histogram != nil:
		return float64(d.Histogram.GetSampleCount())
	}
	t.Fatalf("unknown metric %v", &d)
	return 0
}

package proxy

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kubebus/kubebus/internal/crash/crashtest"
	"github.com/kubebus/kubebus/proxy/rules"
)

// panicApplier is the test hook: its first Apply panics, the next ones
// are reported on applied.
type panicApplier struct {
	calls   atomic.Int32
	applied chan *rules.Ruleset
}

func (a *panicApplier) Apply(_ context.Context, rs *rules.Ruleset) error {
	if a.calls.Add(1) == 1 {
		panic("apply hook panics on purpose")
	}
	a.applied <- rs
	return nil
}

// TestLoopSurvivesSyncPanic: a sync that panics counts as a failed sync
// (and a recovered panic, logged with its stack); the loop retries and
// programs the rules.
func TestLoopSurvivesSyncPanic(t *testing.T) {
	svcs := &fakeCache[*corev1.Service]{synced: make(chan struct{})}
	sls := &fakeCache[*discoveryv1.EndpointSlice]{synced: make(chan struct{})}
	svcs.set(service("a", "10.96.0.1"))
	close(svcs.synced)
	close(sls.synced)
	app := &panicApplier{applied: make(chan *rules.Ruleset, 10)}
	var logs crashtest.Log
	cfg := Config{Applier: app, MinSyncPeriod: time.Millisecond, SyncPeriod: time.Hour,
		Logger: logs.Logger(), Families: []rules.Family{rules.IPv4}}
	p := &proxy{cfg: cfg, services: svcs, slices: sls, changes: make(chan struct{}, 1), metrics: newMetrics(prometheus.NewRegistry())}
	panics := crashtest.Watch("proxy", "sync")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.loop(ctx) }()
	select {
	case rs := <-app.applied:
		if !strings.Contains(rs.Render(), "10.96.0.1 . tcp . 80") {
			t.Errorf("the retry lacks service a:\n%s", rs.Render())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no apply after the panic")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("loop: %v", err)
	}
	if got := value(t, p.metrics.failures); got != 1 {
		t.Errorf("sync failures = %v, want 1", got)
	}
	panics.Expect(t, 1)
	logs.Contains(t, "apply hook panics on purpose", "proxy.(*panicApplier).Apply")
}

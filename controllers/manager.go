package controllers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kubebus/kubebus/internal/crash"
)

// Cache is an informer the manager runs and waits for.
type Cache interface {
	Run(ctx context.Context) error
	HasSynced() bool
}

// Borrowed is a Cache that another part of the process runs, such as the
// informers every component of `kubebus server` shares: its Run only waits
// for ctx to end, its HasSynced is the owner's.
type Borrowed struct {
	Synced interface{ HasSynced() bool }
}

var _ Cache = Borrowed{}

// Run waits for ctx to end (the owner runs the cache).
func (b Borrowed) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// HasSynced reports whether the owner's cache has synced.
func (b Borrowed) HasSynced() bool { return b.Synced.HasSynced() }

// Runnable is work that runs only while leading (a Controller, or a loop
// such as the node monitor).
type Runnable interface {
	Run(ctx context.Context)
}

// LeaseConfig is the leader election through a coordination.k8s.io Lease.
type LeaseConfig struct {
	Namespace, Name string // kube-system / kube-controller-manager
	Identity        string // default hostname_pid
	LeaseDuration   time.Duration
	RenewDeadline   time.Duration
	RetryPeriod     time.Duration
	// Disabled runs the controllers at once, without an election.
	Disabled bool
}

func (l *LeaseConfig) defaults() {
	if l.Namespace == "" {
		l.Namespace = "kube-system"
	}
	if l.Identity == "" {
		host, _ := os.Hostname()
		l.Identity = fmt.Sprintf("%s_%d", host, os.Getpid())
	}
	if l.LeaseDuration == 0 {
		l.LeaseDuration = 15 * time.Second
	}
	if l.RenewDeadline == 0 {
		l.RenewDeadline = 10 * time.Second
	}
	if l.RetryPeriod == 0 {
		l.RetryPeriod = 2 * time.Second
	}
}

// Manager runs caches always and runnables only while leading.
type Manager struct {
	Client kubernetes.Interface
	Lease  LeaseConfig
	Logger *slog.Logger
	// OnLeading, when set, is called each time leadership starts (tests and
	// metrics use it).
	OnLeading func()

	caches    []Cache
	runnables []Runnable
}

// AddCache registers an informer.
func (m *Manager) AddCache(c Cache) { m.caches = append(m.caches, c) }

// Add registers a runnable.
func (m *Manager) Add(r Runnable) { m.runnables = append(m.runnables, r) }

// Run runs until ctx ends. A leader that loses its lease stops its runnables
// at once and campaigns again with its caches still warm.
func (m *Manager) Run(ctx context.Context) error {
	if m.Logger == nil {
		m.Logger = slog.Default()
	}
	m.Lease.defaults()
	var wg sync.WaitGroup
	errc := make(chan error, len(m.caches))
	for _, c := range m.caches {
		wg.Add(1)
		go func(c Cache) {
			defer wg.Done()
			if err := c.Run(ctx); err != nil && ctx.Err() == nil {
				errc <- err
			}
		}(c)
	}
	defer wg.Wait()
	if err := m.waitForCaches(ctx, errc); err != nil {
		return err
	}
	m.Logger.Debug("caches synced from the bus")
	if m.Lease.Disabled {
		m.lead(ctx)
		return nil
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: m.Lease.Namespace, Name: m.Lease.Name},
		Client:     m.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: m.Lease.Identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, ReleaseOnCancel: true, Name: m.Lease.Name,
			LeaseDuration: m.Lease.LeaseDuration, RenewDeadline: m.Lease.RenewDeadline, RetryPeriod: m.Lease.RetryPeriod,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) {
					m.Logger.Info("leading", "lease", m.Lease.Namespace+"/"+m.Lease.Name, "identity", m.Lease.Identity)
					m.lead(lctx)
				},
				OnStoppedLeading: func() {
					m.Logger.Info("stopped leading", "lease", m.Lease.Namespace+"/"+m.Lease.Name)
				},
			},
		})
		if err != nil {
			return fmt.Errorf("configuring leader election: %w", err)
		}
		le.Run(ctx) // returns when leadership is lost or ctx ends
	}
	return nil
}

func (m *Manager) waitForCaches(ctx context.Context, errc <-chan error) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		synced := true
		for _, c := range m.caches {
			synced = synced && c.HasSynced()
		}
		if synced {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errc:
			return fmt.Errorf("a cache failed before syncing: %w", err)
		case <-t.C:
		}
	}
}

// lead runs every runnable until lctx ends.
func (m *Manager) lead(lctx context.Context) {
	if m.OnLeading != nil {
		m.OnLeading()
	}
	var wg sync.WaitGroup
	for _, r := range m.runnables {
		wg.Add(1)
		go func(r Runnable) { defer wg.Done(); m.runSafely(lctx, r) }(r)
	}
	wg.Wait()
}

// Restarts of a runnable that panicked wait this long, doubling up to
// maxRestartDelay.
const (
	restartDelay    = 500 * time.Millisecond
	maxRestartDelay = time.Minute
)

// runSafely runs r until lctx ends. A panic in r is recovered (logged with
// its stack, counted in kubebus_panics_total{component="manager"}) and r
// runs again after a backoff, so the other runnables and the process go
// on.
func (m *Manager) runSafely(lctx context.Context, r Runnable) {
	where := fmt.Sprintf("%T", r)
	delay := restartDelay
	for {
		err := crash.Do(m.Logger, "manager", where, "", func() error { r.Run(lctx); return nil })
		if err == nil || lctx.Err() != nil {
			return
		}
		select {
		case <-lctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, maxRestartDelay)
	}
}

// ErrNotLeader may be returned by writers that notice they lost the lease.
var ErrNotLeader = errors.New("controllers: not the leader")

package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// supervisor runs the parts of one process as tiers: the parts of a tier
// run together, the first part to fail stops everything, and on the way
// out the tiers stop last first, each one waited for before the tier it
// depends on is stopped. `kubebus server` runs the API server in one tier
// and the components in the next, so the components release their Leases
// through a live API server before it stops.
type supervisor struct {
	ctx   context.Context // the process's: its end is a clean stop
	log   *slog.Logger
	tiers []*tier

	once   sync.Once
	failed chan struct{}
	err    error
}

type tier struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newSupervisor(ctx context.Context, log *slog.Logger) *supervisor {
	return &supervisor{ctx: ctx, log: log, failed: make(chan struct{})}
}

// tier adds a tier, stopped before every tier added earlier.
func (s *supervisor) tier() *tier {
	ctx, cancel := context.WithCancel(context.WithoutCancel(s.ctx))
	t := &tier{ctx: ctx, cancel: cancel}
	s.tiers = append(s.tiers, t)
	return t
}

// Go runs part name in tier t. A part that returns before its tier is
// stopped has failed, whether or not it returned an error.
func (s *supervisor) Go(t *tier, name string, run func(context.Context) error) {
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		err := run(t.ctx)
		if t.ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("stopped")
		}
		s.fail(fmt.Errorf("%s: %w", name, err))
	}()
}

// fail records the first failure and starts the stop.
func (s *supervisor) fail(err error) {
	s.once.Do(func() {
		s.err = err
		close(s.failed)
	})
}

// Failed is closed when a part failed.
func (s *supervisor) Failed() <-chan struct{} { return s.failed }

// Wait blocks until the process's context ends or a part fails, then
// stops the tiers last first, giving each at most grace, and returns the
// first failure (nil for a clean stop).
func (s *supervisor) Wait(grace time.Duration) error {
	select {
	case <-s.ctx.Done():
	case <-s.failed:
	}
	for i := len(s.tiers) - 1; i >= 0; i-- {
		t := s.tiers[i]
		t.cancel()
		done := make(chan struct{})
		go func() { t.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(grace):
			s.log.Warn("parts still running after the grace period; going on", "tier", i, "grace", grace)
		}
	}
	select {
	case <-s.failed:
		return s.err
	default:
		return nil
	}
}

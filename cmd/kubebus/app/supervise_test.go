package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestSupervisorStopsTiersLastFirst(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	s := newSupervisor(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)))
	var (
		mu      sync.Mutex
		stopped []string
	)
	part := func(name string, apiUp *bool) func(context.Context) error {
		return func(ctx context.Context) error {
			<-ctx.Done()
			mu.Lock()
			defer mu.Unlock()
			if apiUp != nil && !*apiUp {
				t.Errorf("%s stopped after the API server", name)
			}
			stopped = append(stopped, name)
			return nil
		}
	}
	up := true
	api := s.tier()
	s.Go(api, "api", func(ctx context.Context) error {
		err := part("api", nil)(ctx)
		mu.Lock()
		up = false
		mu.Unlock()
		return err
	})
	comps := s.tier()
	s.Go(comps, "scheduler", part("scheduler", &up))
	s.Go(comps, "controller-manager", part("controller-manager", &up))
	cancel()
	if err := s.Wait(5 * time.Second); err != nil {
		t.Fatalf("a clean stop returned %v", err)
	}
	if len(stopped) != 3 || stopped[2] != "api" {
		t.Fatalf("stopped in order %v, want both components before api", stopped)
	}
}

func TestSupervisorFirstFailureStopsAll(t *testing.T) {
	t.Parallel()
	s := newSupervisor(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	var stopped []string
	var mu sync.Mutex
	wait := func(name string) func(context.Context) error {
		return func(ctx context.Context) error {
			<-ctx.Done()
			mu.Lock()
			stopped = append(stopped, name)
			mu.Unlock()
			return ctx.Err()
		}
	}
	a, b := s.tier(), s.tier()
	s.Go(a, "api", wait("api"))
	s.Go(b, "scheduler", wait("scheduler"))
	s.Go(b, "kubelet", func(context.Context) error { return errors.New("cni: plugin not found") })
	s.Go(b, "proxy", func(context.Context) error { return nil })
	err := s.Wait(5 * time.Second)
	if err == nil || (err.Error() != "kubelet: cni: plugin not found" && err.Error() != "proxy: stopped") {
		t.Fatalf("Wait = %v, want the first part's failure", err)
	}
	slices.Sort(stopped)
	if !slices.Equal(stopped, []string{"api", "scheduler"}) {
		t.Fatalf("stopped %v, want every other part", stopped)
	}
}

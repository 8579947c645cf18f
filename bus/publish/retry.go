package publish

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// permanent marks an error that retry must not retry (nil stays nil).
func permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// retry runs f until it succeeds, returns a permanent error, or ctx ends,
// backing off from 50ms to 2s. NATS being down is the usual reason.
func retry(ctx context.Context, log *slog.Logger, what string, f func() error) error {
	backoff := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := f()
		if err == nil {
			return nil
		}
		var pe permanentError
		if errors.As(err, &pe) {
			return pe.err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if attempt == 3 || attempt%50 == 49 {
			log.Warn("bus unavailable; retrying", "what", what, "err", err, "attempt", attempt+1)
		}
		sleep(ctx, backoff)
		backoff = min(backoff*2, 2*time.Second)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

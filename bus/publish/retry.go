package publish

import (
	"context"
	"errors"
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
// backing off from 50ms to 2s; NATS being down is the usual reason. An
// error that may mean a stream is gone is returned at once: retrying
// would never bring the stream back, and lead checks the streams.
func (p *Publisher) retry(ctx context.Context, what string, f func() error) error {
	return p.retryWhile(ctx, what, func(err error) bool { return !isStreamGone(err) }, f)
}

// retryAll is retry that retries every error that is not permanent.
func (p *Publisher) retryAll(ctx context.Context, what string, f func() error) error {
	return p.retryWhile(ctx, what, func(error) bool { return true }, f)
}

// retryWhile is retry for the errors again accepts. Each failure goes to
// the health record, which logs once per cause.
func (p *Publisher) retryWhile(ctx context.Context, what string, again func(error) bool, f func() error) error {
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
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
		p.health.fail(what, err)
		if !again(err) {
			return err
		}
		p.log.Debug("bus unavailable; retrying", "what", what, "err", err, "attempt", attempt)
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

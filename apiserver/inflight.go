package apiserver

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// inflight bounds concurrent requests of one kind (read-only or
// mutating). A request past the bound waits for a slot, at most wait, as
// upstream's priority and fairness queues it, rather than failing at once:
// a client told 429 sleeps for the Retry-After second, which under a
// burst costs far more than the wait.
type inflight struct {
	slots chan struct{}
	wait  time.Duration
}

func newInflight(n int, wait time.Duration) inflight {
	return inflight{slots: make(chan struct{}, n), wait: wait}
}

// acquire takes a slot, waiting at most l.wait, or fails with 429 (or the
// context's error when the client gave up).
func (l inflight) acquire(ctx context.Context) (release func(), err error) {
	release = func() { <-l.slots }
	select {
	case l.slots <- struct{}{}:
		return release, nil
	default:
	}
	if l.wait > 0 {
		t := time.NewTimer(l.wait)
		defer t.Stop()
		select {
		case l.slots <- struct{}{}:
			return release, nil
		case <-ctx.Done():
			return nil, apierrors.NewTimeoutError("the client gave up while the request waited for a slot", 0)
		case <-t.C:
		}
	}
	return nil, apierrors.NewTooManyRequests("too many requests in flight, please try again later", 1)
}

package daemonset

import (
	"sync"
	"time"
)

// Failed pods are replaced after a backoff per DaemonSet and node, as
// upstream: 1s, doubling up to 15 minutes, so a node where the pod keeps
// failing (admission refusing it, say) does not spin.
const (
	failedBackoffInitial = time.Second
	failedBackoffMax     = 15 * time.Minute
)

// failedBackoff remembers, per DaemonSet UID and node, when a failed pod
// may next be deleted and replaced.
type failedBackoff struct {
	mu sync.Mutex
	m  map[string]backoffEntry
}

type backoffEntry struct {
	next  time.Time
	delay time.Duration
}

func newFailedBackoff() *failedBackoff { return &failedBackoff{m: map[string]backoffEntry{}} }

// allow says whether the failed pod of key may be replaced at now; when it
// may, the next one waits twice as long. When not, wait is how long until
// it may.
func (b *failedBackoff) allow(key string, now time.Time) (ok bool, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, had := b.m[key]
	switch {
	case had && now.Before(e.next):
		return false, e.next.Sub(now)
	case had && now.Sub(e.next) < 2*failedBackoffMax:
		e.delay = min(2*e.delay, failedBackoffMax)
	default:
		e.delay = failedBackoffInitial
	}
	e.next = now.Add(e.delay)
	b.m[key] = e
	if len(b.m) > 10000 {
		for k, x := range b.m {
			if now.Sub(x.next) > 2*failedBackoffMax {
				delete(b.m, k)
			}
		}
	}
	return true, 0
}

// holdBackFailed drops from a the failed pods still in their backoff and
// returns how long until the first of them may go (0: none held).
func (b *failedBackoff) holdBackFailed(dsUID string, a actions, now time.Time) (actions, time.Duration) {
	if len(a.failed) == 0 {
		return a, 0
	}
	held := map[string]bool{}
	var next time.Duration
	failed := a.failed[:0:0]
	for _, p := range a.failed {
		if ok, wait := b.allow(dsUID+"/"+p.Spec.NodeName, now); !ok {
			held[p.Name] = true
			if next == 0 || wait < next {
				next = wait
			}
			continue
		}
		failed = append(failed, p)
	}
	a.failed = failed
	if len(held) > 0 {
		del := a.delete[:0:0]
		for _, p := range a.delete {
			if !held[p.Name] {
				del = append(del, p)
			}
		}
		a.delete = del
	}
	return a, next
}

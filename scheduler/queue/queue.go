// Package queue is the scheduler's queue of pending pods: an active queue
// ordered by priority then age, a backoff queue for pods whose last attempt
// failed (1s doubling to 10s by default), and an unschedulable pool whose
// pods wait for a cluster event (node added or changed, pod deleted, ...)
// that may let them fit. Nothing polls: Pop sleeps until a pod is active or
// the earliest backoff expires.
//
// The caller's duties: Add pending pods (and their updates) from the
// informer, Delete them when they are bound or gone, Pop one at a time,
// and after each attempt call exactly one of Forget (scheduled),
// Unschedulable (fits nowhere) or Backoff (an error). Call MoveAll on
// events that may make unschedulable pods fit.
package queue

import (
	"container/heap"
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubebus/kubebus/scheduler/framework"
)

// Config configures a Queue.
type Config struct {
	InitialBackoff time.Duration // default 1s
	MaxBackoff     time.Duration // default 10s
	// Now is the clock (default time.Now); tests pass a fake.
	Now func() time.Time
}

// Queued is a pod taken from the queue.
type Queued struct {
	Pod *v1.Pod
	// Attempts counts the earlier failed attempts.
	Attempts int
	// cycle is the move counter when the pod was popped.
	cycle uint64
}

type where int

const (
	active where = iota + 1
	backingOff
	unschedulable
	inFlight
)

type entry struct {
	pod      *v1.Pod
	key      string
	added    time.Time // first enqueued: the age order
	attempts int
	failedAt time.Time
	where    where
	index    int // in its heap
}

// Queue holds the pending pods. It is safe for concurrent use.
type Queue struct {
	cfg     Config
	mu      sync.Mutex
	entries map[string]*entry
	active  activeHeap
	backoff backoffHeap
	moves   uint64        // bumped by MoveAll
	wake    chan struct{} // signalled when something becomes active
}

// New returns an empty queue.
func New(cfg Config) *Queue {
	if cfg.InitialBackoff <= 0 {
		cfg.InitialBackoff = time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 10 * time.Second
	}
	if cfg.MaxBackoff < cfg.InitialBackoff {
		cfg.MaxBackoff = cfg.InitialBackoff
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Queue{cfg: cfg, entries: map[string]*entry{}, backoff: backoffHeap{cfg: cfg}, wake: make(chan struct{}, 1)}
}

// Add enqueues a pending pod, or records an update of one already known:
// an update moves an unschedulable pod on (to active, or to backoff if its
// backoff has not expired), since its spec may now fit.
func (q *Queue) Add(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := framework.PodKey(pod)
	e := q.entries[key]
	if e == nil {
		e = &entry{pod: pod, key: key, added: q.cfg.Now()}
		q.entries[key] = e
		q.toActive(e)
		return
	}
	e.pod = pod
	switch e.where {
	case active:
		heap.Fix(&q.active, e.index)
	case unschedulable:
		q.release(e, q.cfg.Now())
	}
}

// Update replaces the stored object of a queued pod without moving it
// (a status-only change). Unknown pods are ignored.
func (q *Queue) Update(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e := q.entries[framework.PodKey(pod)]; e != nil {
		e.pod = pod
		if e.where == active {
			heap.Fix(&q.active, e.index)
		}
	}
}

// Delete forgets a pod (bound, or deleted).
func (q *Queue) Delete(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.remove(framework.PodKey(pod))
}

func (q *Queue) remove(key string) {
	e := q.entries[key]
	if e == nil {
		return
	}
	switch e.where {
	case active:
		heap.Remove(&q.active, e.index)
	case backingOff:
		heap.Remove(&q.backoff, e.index)
	}
	delete(q.entries, key)
}

// Pop waits for the next active pod, highest priority then oldest first,
// and marks it in flight. It returns ctx's error when ctx ends.
func (q *Queue) Pop(ctx context.Context) (Queued, error) {
	for {
		q.mu.Lock()
		now := q.cfg.Now()
		q.flushBackoff(now)
		if q.active.Len() > 0 {
			e := heap.Pop(&q.active).(*entry)
			e.where = inFlight
			qp := Queued{Pod: e.pod, Attempts: e.attempts, cycle: q.moves}
			q.mu.Unlock()
			return qp, nil
		}
		var timer *time.Timer
		var fire <-chan time.Time
		if q.backoff.Len() > 0 {
			timer = time.NewTimer(q.backoff.entries[0].readyAt(q.cfg).Sub(now))
			fire = timer.C
		}
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return Queued{}, ctx.Err()
		case <-q.wake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// Forget ends a successful attempt: the pod leaves the queue.
func (q *Queue) Forget(pod *v1.Pod) { q.Delete(pod) }

// Unschedulable ends an attempt that found no node: the pod waits in the
// unschedulable pool for MoveAll, or in backoff if a move happened while
// it was in flight (the event it needed may have come already).
func (q *Queue) Unschedulable(qp Queued) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e := q.failed(qp)
	if e == nil {
		return
	}
	if q.moves != qp.cycle {
		q.toBackoff(e)
		return
	}
	e.where = unschedulable
}

// Backoff ends an attempt that failed with an error: the pod retries after
// its backoff.
func (q *Queue) Backoff(qp Queued) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e := q.failed(qp); e != nil {
		q.toBackoff(e)
	}
}

// failed records a failed attempt of an in-flight pod; nil if the pod was
// deleted or re-added meanwhile (then it is already where it belongs).
func (q *Queue) failed(qp Queued) *entry {
	e := q.entries[framework.PodKey(qp.Pod)]
	if e == nil || e.where != inFlight {
		return nil
	}
	e.attempts++
	e.failedAt = q.cfg.Now()
	return e
}

// MoveAll releases every unschedulable pod (to active, or to backoff until
// its backoff expires). Call it on events that may make pods fit.
func (q *Queue) MoveAll() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.moves++
	now := q.cfg.Now()
	for _, e := range q.entries {
		if e.where == unschedulable {
			q.release(e, now)
		}
	}
}

// Len returns the number of pods in each state: active, backoff,
// unschedulable.
func (q *Queue) Len() (activeN, backoffN, unschedulableN int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range q.entries {
		switch e.where {
		case active:
			activeN++
		case backingOff:
			backoffN++
		case unschedulable:
			unschedulableN++
		}
	}
	return
}

// Backoff returns the backoff after n failed attempts: initial * 2^(n-1),
// at most max; 0 for n == 0.
func (c Config) Backoff(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	d := c.InitialBackoff
	for i := 1; i < n && d < c.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, c.MaxBackoff)
}

func (e *entry) readyAt(c Config) time.Time { return e.failedAt.Add(c.Backoff(e.attempts)) }

func (q *Queue) release(e *entry, now time.Time) {
	if e.readyAt(q.cfg).After(now) {
		q.toBackoff(e)
		return
	}
	q.toActive(e)
}

func (q *Queue) toActive(e *entry) {
	e.where = active
	heap.Push(&q.active, e)
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *Queue) toBackoff(e *entry) {
	e.where = backingOff
	heap.Push(&q.backoff, e)
	// Pop may be sleeping on a later timer.
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *Queue) flushBackoff(now time.Time) {
	for q.backoff.Len() > 0 && !q.backoff.entries[0].readyAt(q.cfg).After(now) {
		e := heap.Pop(&q.backoff).(*entry)
		e.where = active
		heap.Push(&q.active, e)
	}
}

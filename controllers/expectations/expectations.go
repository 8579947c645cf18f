// Package expectations remembers, per controller object key, the writes a
// controller made that its cache has not shown yet: creations counted,
// deletions either named (pod "namespace/name" keys) or counted. While any
// are outstanding the object is not Satisfied: a sync must not create or
// delete again, because the cache does not yet reflect the controller's
// own writes. Outstanding writes older than the TTL are given up on, so a
// lost event cannot stall an object for good.
//
// It is the shared form of upstream's ControllerExpectations (counted) and
// UIDTrackingControllerExpectations (named deletions), used by the
// ReplicaSet, DaemonSet and Job controllers.
package expectations

import (
	"sync"
	"time"
)

// DefaultTTL is how long unobserved writes hold an object's syncs back:
// long enough for any informer lag, short enough that a lost event does
// not stall it for good.
const DefaultTTL = 5 * time.Minute

// Expectations is safe for concurrent use. The zero value is not usable:
// build one with New.
type Expectations struct {
	mu  sync.Mutex
	now func() time.Time
	ttl time.Duration
	m   map[string]*record
}

type record struct {
	adds  int                 // creations not yet seen
	dels  int                 // counted deletions not yet seen
	named map[string]struct{} // named deletions not yet seen
	since time.Time
}

// New returns empty Expectations reading the time from now (time.Now when
// nil) and giving up on writes older than ttl (DefaultTTL when <= 0).
func New(now func() time.Time, ttl time.Duration) *Expectations {
	if now == nil {
		now = time.Now
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Expectations{now: now, ttl: ttl, m: map[string]*record{}}
}

// Satisfied reports whether key may create or delete: it has no
// outstanding writes, or they are older than the TTL.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok || (x.adds <= 0 && x.dels <= 0 && len(x.named) == 0) {
		return true
	}
	return e.now().Sub(x.since) > e.ttl
}

// Expect replaces key's expectations with adds creations and the named
// deletions dels, from now.
func (e *Expectations) Expect(key string, adds int, dels []string) {
	x := &record{adds: adds, named: make(map[string]struct{}, len(dels))}
	for _, d := range dels {
		x.named[d] = struct{}{}
	}
	e.set(key, x)
}

// ExpectCreations replaces key's expectations with n creations.
func (e *Expectations) ExpectCreations(key string, n int) { e.Expect(key, n, nil) }

// ExpectDeletions replaces key's expectations with the named deletions.
func (e *Expectations) ExpectDeletions(key string, dels []string) { e.Expect(key, 0, dels) }

// ExpectCounts replaces key's expectations with adds creations and dels
// deletions that are counted, not named (see DeletionsObserved).
func (e *Expectations) ExpectCounts(key string, adds, dels int) {
	e.set(key, &record{adds: adds, dels: dels})
}

func (e *Expectations) set(key string, x *record) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x.since = e.now()
	e.m[key] = x
}

// CreationsObserved lowers key's outstanding creations by n: the cache
// showed them, or they failed and never will be shown.
func (e *Expectations) CreationsObserved(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.adds -= n
	}
}

// DeletionObserved notes that the named deletion was seen (or failed).
// Observing a name that is not expected changes nothing.
func (e *Expectations) DeletionObserved(key, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		delete(x.named, name)
	}
}

// DeletionsObserved lowers key's counted deletions by n.
func (e *Expectations) DeletionsObserved(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.dels -= n
	}
}

// Forget drops key's expectations (its object was deleted).
func (e *Expectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}

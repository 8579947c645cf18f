package daemonset

import (
	"sync"
	"time"
)

// expectationsTTL is how long unobserved writes hold a DaemonSet's syncs
// back: long enough for any informer lag, short enough that a lost event
// does not stall a DaemonSet for good.
const expectationsTTL = 5 * time.Minute

// expectations counts, per DaemonSet key, the pod creations and deletions
// this controller made that the cache has not shown yet. While any are
// outstanding a sync writes status only: the cache does not yet reflect
// the controller's own writes, and acting on it would create twice or
// delete more than maxUnavailable allows.
type expectations struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]*expectation
}

type expectation struct {
	adds  int                 // creations not yet seen in the cache
	dels  map[string]struct{} // pods ("namespace/name") whose deletion is not yet seen
	since time.Time
}

func newExpectations(now func() time.Time) *expectations {
	return &expectations{now: now, m: map[string]*expectation{}}
}

// satisfied reports whether the DaemonSet may create or delete pods.
func (e *expectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok || (x.adds <= 0 && len(x.dels) == 0) {
		return true
	}
	return e.now().Sub(x.since) > expectationsTTL
}

// expect records the creations and deletions about to be made.
func (e *expectations) expect(key string, adds int, dels []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := &expectation{adds: adds, dels: make(map[string]struct{}, len(dels)), since: e.now()}
	for _, p := range dels {
		x.dels[p] = struct{}{}
	}
	e.m[key] = x
}

// creationObserved lowers the outstanding creations by n: the cache showed
// them, or they failed and never will be shown.
func (e *expectations) creationObserved(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.adds -= n
	}
}

// deletionObserved notes that a pod's deletion was seen (or failed).
func (e *expectations) deletionObserved(key, pod string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		delete(x.dels, pod)
	}
}

// forget drops a DaemonSet's expectations (it was deleted).
func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}

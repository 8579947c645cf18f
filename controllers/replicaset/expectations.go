package replicaset

import (
	"sync"
	"time"
)

// expectationsTTL is how long unobserved writes hold a ReplicaSet's syncs
// back: long enough for any informer lag, short enough that a lost event
// does not stall a ReplicaSet for good.
const expectationsTTL = 5 * time.Minute

// expectations remembers, per ReplicaSet key, the pod creations and
// deletions this controller made and the cache has not shown yet. While any
// are outstanding the ReplicaSet is not "satisfied": a sync updates its
// status but neither creates nor deletes, because the cache does not yet
// reflect the controller's own writes.
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

// satisfied reports whether the ReplicaSet may create or delete pods: it has
// no outstanding writes, or they are older than the TTL.
func (e *expectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok || (x.adds <= 0 && len(x.dels) == 0) {
		return true
	}
	return e.now().Sub(x.since) > expectationsTTL
}

// expectCreations records n creations about to be made.
func (e *expectations) expectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = &expectation{adds: n, since: e.now()}
}

// expectDeletions records the pods about to be deleted.
func (e *expectations) expectDeletions(key string, pods []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := &expectation{dels: make(map[string]struct{}, len(pods)), since: e.now()}
	for _, p := range pods {
		x.dels[p] = struct{}{}
	}
	e.m[key] = x
}

// creationsObserved lowers the outstanding creations by n: the cache showed
// them, or they failed and never will be shown.
func (e *expectations) creationsObserved(key string, n int) {
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

// forget drops a ReplicaSet's expectations (it was deleted).
func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}

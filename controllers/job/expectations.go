package job

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// expectationsTTL is how long unobserved writes hold a Job's pod creations
// and deletions back.
const expectationsTTL = 5 * time.Minute

// expectations remembers, per Job key, the pod creations and deletions
// this controller made that the cache has not shown yet (while any are
// outstanding, a sync creates and deletes nothing), and the pods whose
// tracking finalizer it removed that the cache still shows with it (they
// are counted already and must not be counted again).
type expectations struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]*expectation
}

type expectation struct {
	adds, dels int
	since      time.Time
	rmFinal    map[types.UID]bool
}

func newExpectations(now func() time.Time) *expectations {
	return &expectations{now: now, m: map[string]*expectation{}}
}

func (e *expectations) get(key string) *expectation {
	x, ok := e.m[key]
	if !ok {
		x = &expectation{rmFinal: map[types.UID]bool{}}
		e.m[key] = x
	}
	return x
}

// satisfied reports whether the Job may create or delete pods.
func (e *expectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok || (x.adds <= 0 && x.dels <= 0) {
		return true
	}
	return e.now().Sub(x.since) > expectationsTTL
}

func (e *expectations) expect(key string, adds, dels int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.get(key)
	x.adds, x.dels, x.since = adds, dels, e.now()
}

func (e *expectations) created(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.adds--
	}
}

func (e *expectations) deleted(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		x.dels--
	}
}

// expectFinalizerRemoved records pods whose finalizer is being removed.
func (e *expectations) expectFinalizerRemoved(key string, uids []types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.get(key)
	for _, u := range uids {
		x.rmFinal[u] = true
	}
}

// finalizerRemoved notes the cache showed (or the API refused) a removal.
func (e *expectations) finalizerRemoved(key string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		delete(x.rmFinal, uid)
	}
}

// removing returns a copy of the pods whose finalizer removal is unseen.
func (e *expectations) removing(key string) map[types.UID]bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[types.UID]bool{}
	if x, ok := e.m[key]; ok {
		for u := range x.rmFinal {
			out[u] = true
		}
	}
	return out
}

func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}

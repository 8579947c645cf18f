package job

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// finalizerExpectations remembers, per Job key, the pods whose tracking
// finalizer this controller removed that the cache still shows with it:
// they are counted already and must not be counted again. (The pod
// creations and deletions in flight are in an expectations.Expectations,
// counted as upstream's Job controller counts them.)
type finalizerExpectations struct {
	mu sync.Mutex
	m  map[string]map[types.UID]bool
}

func newFinalizerExpectations() *finalizerExpectations {
	return &finalizerExpectations{m: map[string]map[types.UID]bool{}}
}

// expect records pods whose finalizer is being removed.
func (e *finalizerExpectations) expect(key string, uids []types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok {
		x = map[types.UID]bool{}
		e.m[key] = x
	}
	for _, u := range uids {
		x[u] = true
	}
}

// removed notes the cache showed (or the API refused) a removal.
func (e *finalizerExpectations) removed(key string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m[key], uid)
}

// removing returns a copy of the pods whose finalizer removal is unseen.
func (e *finalizerExpectations) removing(key string) map[types.UID]bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[types.UID]bool{}
	for u := range e.m[key] {
		out[u] = true
	}
	return out
}

func (e *finalizerExpectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}

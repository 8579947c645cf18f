package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	schedulingv1 "k8s.io/api/scheduling/v1"

	"github.com/kubebus/kubebus/apiserver/storage"
)

// priorityClassPrefix is where the API server stores PriorityClasses.
const priorityClassPrefix = "/registry/" + schedulingGroup + "/priorityclasses/"

// KVReader is the part of the API server's store StoredPriorityClasses reads
// through (*storage.Store has it).
type KVReader interface {
	Get(ctx context.Context, key string) (storage.KV, error)
	List(ctx context.Context, prefix, startKey string, rev, limit int64) (storage.Page, error)
}

// serializableLister lists without a quorum round trip (*storage.Store
// has it).
type serializableLister interface {
	ListSerializable(ctx context.Context, prefix string) (storage.Page, error)
}

// StoredPriorityClasses reads PriorityClasses straight from the API server's
// store, so a class written a moment ago is seen: a named class with a
// linearizable read; the list every pod without a class needs (for the
// global default) from the local member when the store can, which on the
// embedded single-member etcd sees every acknowledged write without the
// quorum round that would otherwise sit in front of every such create.
//
// The reads stay fresh, but decoding is not repeated: a class whose stored
// revision is the one decoded before is served from that decoding. The
// classes returned are shared and must not be modified.
type StoredPriorityClasses struct {
	Store KVReader

	mu      sync.Mutex
	decoded map[string]decodedClass // by key
}

// decodedClass is a class as decoded from the stored revision rev.
type decodedClass struct {
	rev int64
	pc  *schedulingv1.PriorityClass
}

var _ PriorityClasses = (*StoredPriorityClasses)(nil)

// Get implements PriorityClasses.
func (s *StoredPriorityClasses) Get(ctx context.Context, name string) (*schedulingv1.PriorityClass, error) {
	kv, err := s.Store.Get(ctx, priorityClassPrefix+name)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNoPriorityClass, name)
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.decode(kv)
}

// List implements PriorityClasses.
func (s *StoredPriorityClasses) List(ctx context.Context) ([]*schedulingv1.PriorityClass, error) {
	var page storage.Page
	var err error
	if sl, ok := s.Store.(serializableLister); ok {
		page, err = sl.ListSerializable(ctx, priorityClassPrefix)
	} else {
		page, err = s.Store.List(ctx, priorityClassPrefix, "", 0, 0)
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*schedulingv1.PriorityClass, 0, len(page.KVs))
	listed := make(map[string]bool, len(page.KVs))
	for _, kv := range page.KVs {
		pc, err := s.decode(kv)
		if err != nil {
			return nil, err
		}
		listed[kv.Key] = true
		out = append(out, pc)
	}
	// Forget the classes that are gone.
	for k := range s.decoded {
		if !listed[k] {
			delete(s.decoded, k)
		}
	}
	return out, nil
}

// decode returns the class stored in kv, decoding it only when its revision
// is not the one decoded last. s.mu must be held.
func (s *StoredPriorityClasses) decode(kv storage.KV) (*schedulingv1.PriorityClass, error) {
	if d, ok := s.decoded[kv.Key]; ok && d.rev == kv.ModRevision && kv.ModRevision != 0 {
		return d.pc, nil
	}
	pc, err := decodeClass(kv)
	if err != nil {
		return nil, err
	}
	if s.decoded == nil {
		s.decoded = map[string]decodedClass{}
	}
	s.decoded[kv.Key] = decodedClass{rev: kv.ModRevision, pc: pc}
	return pc, nil
}

func decodeClass(kv storage.KV) (*schedulingv1.PriorityClass, error) {
	pc := &schedulingv1.PriorityClass{}
	if err := json.Unmarshal(kv.Value, pc); err != nil {
		return nil, fmt.Errorf("decoding stored %s: %w", kv.Key, err)
	}
	return pc, nil
}

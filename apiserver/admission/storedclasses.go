package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
type StoredPriorityClasses struct {
	Store KVReader
}

var _ PriorityClasses = StoredPriorityClasses{}

// Get implements PriorityClasses.
func (s StoredPriorityClasses) Get(ctx context.Context, name string) (*schedulingv1.PriorityClass, error) {
	kv, err := s.Store.Get(ctx, priorityClassPrefix+name)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNoPriorityClass, name)
	}
	if err != nil {
		return nil, err
	}
	return decodeClass(kv)
}

// List implements PriorityClasses.
func (s StoredPriorityClasses) List(ctx context.Context) ([]*schedulingv1.PriorityClass, error) {
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
	out := make([]*schedulingv1.PriorityClass, 0, len(page.KVs))
	for _, kv := range page.KVs {
		pc, err := decodeClass(kv)
		if err != nil {
			return nil, err
		}
		out = append(out, pc)
	}
	return out, nil
}

func decodeClass(kv storage.KV) (*schedulingv1.PriorityClass, error) {
	pc := &schedulingv1.PriorityClass{}
	if err := json.Unmarshal(kv.Value, pc); err != nil {
		return nil, fmt.Errorf("decoding stored %s: %w", kv.Key, err)
	}
	return pc, nil
}

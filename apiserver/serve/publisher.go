package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kubebus/kubebus/apiserver/storage"
	"github.com/kubebus/kubebus/bus/publish"
)

// storeSource adapts the etcd store to the publisher's Source.
type storeSource struct{ store *storage.Store }

func (s storeSource) Changes(ctx context.Context, from int64) (<-chan publish.Change, func() error) {
	w := s.store.Watch(ctx, storage.RegistryPrefix, from)
	out := make(chan publish.Change, 256)
	var werr error
	go func() {
		defer close(out)
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		for {
			var ev storage.Event
			var ok bool
			select {
			case <-tick.C:
				_ = w.RequestProgress()
				continue
			case ev, ok = <-w.Events:
			}
			if !ok {
				break
			}
			c := publish.Change{Progress: ev.Type == storage.Progress, Delete: ev.Type == storage.Delete, Created: ev.Created,
				Revision: ev.Revision, Key: ev.KV.Key, Value: publishable(ev.KV.Key, ev.KV.Value), Prev: publishable(ev.KV.Key, ev.Prev.Value), PrevRevision: ev.Prev.ModRevision}
			select {
			case out <- c:
			case <-ctx.Done():
				werr = ctx.Err()
				return
			}
		}
		werr = w.Err()
		if errors.Is(werr, storage.ErrCompacted) {
			werr = fmt.Errorf("%w: %v", publish.ErrCompacted, werr)
		}
	}()
	return out, func() error { return werr }
}

func (s storeSource) Snapshot(ctx context.Context) (int64, []publish.KeyValue, error) {
	var kvs []publish.KeyValue
	var rev int64
	start := ""
	for {
		page, err := s.store.List(ctx, storage.RegistryPrefix, start, rev, 1000)
		if err != nil {
			return 0, nil, err
		}
		rev = page.Revision
		for _, kv := range page.KVs {
			kvs = append(kvs, publish.KeyValue{Key: kv.Key, Value: publishable(kv.Key, kv.Value), Revision: kv.ModRevision})
		}
		if !page.More || len(page.KVs) == 0 {
			return rev, kvs, nil
		}
		start = page.KVs[len(page.KVs)-1].Key + "\x00"
	}
}

// Revision is etcd's current revision.
func (s storeSource) Revision(ctx context.Context) (int64, error) { return s.store.Revision(ctx) }

// secretsPrefix is where Secrets are stored.
const secretsPrefix = storage.RegistryPrefix + "core/secrets/"

// publishable is the value of key as the bus may carry it. Secrets go out
// as metadata only: no component reads Secrets from the bus (the kubelet
// GETs the ones its pods use through the API, where the Node authorizer
// limits it to them), and everything on the bus is visible to every bus
// consumer and to kubebus tap, so Secret data must never reach it.
func publishable(key string, value []byte) []byte {
	if !strings.HasPrefix(key, secretsPrefix) {
		return value
	}
	return redactSecret(value)
}

// redactSecret returns a stored Secret without its data and stringData
// and without kubectl apply's last-applied-configuration annotation (a
// copy of the applied Secret, data included), every other field (kind,
// apiVersion, metadata, type, immutable) as it was. A value that is not a
// JSON object comes back empty, which the publisher skips (or, for a
// delete, replaces with the bare key): it must fail closed.
func redactSecret(value []byte) []byte {
	if len(value) == 0 {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(value, &fields); err != nil || fields == nil {
		return nil
	}
	_, hasData := fields["data"]
	_, hasStringData := fields["stringData"]
	meta, lastApplied, ok := withoutLastApplied(fields["metadata"])
	if !ok {
		return nil
	}
	if !hasData && !hasStringData && !lastApplied {
		return value
	}
	delete(fields, "data")
	delete(fields, "stringData")
	if lastApplied {
		fields["metadata"] = meta
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return nil
	}
	return out
}

// lastAppliedAnnotation is where kubectl apply keeps what it applied.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// withoutLastApplied returns metadata without the last-applied annotation,
// and whether it had one; ok is false when metadata is not an object with
// string annotations.
func withoutLastApplied(metadata json.RawMessage) (out json.RawMessage, had, ok bool) {
	if len(metadata) == 0 || string(metadata) == "null" {
		return metadata, false, true
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(metadata, &meta); err != nil || meta == nil {
		return nil, false, false
	}
	raw, found := meta["annotations"]
	if !found || string(raw) == "null" {
		return metadata, false, true
	}
	var annotations map[string]string
	if err := json.Unmarshal(raw, &annotations); err != nil {
		return nil, false, false
	}
	if _, had = annotations[lastAppliedAnnotation]; !had {
		return metadata, false, true
	}
	delete(annotations, lastAppliedAnnotation)
	rest, err := json.Marshal(annotations)
	if err != nil {
		return nil, false, false
	}
	meta["annotations"] = rest
	out, err = json.Marshal(meta)
	if err != nil {
		return nil, false, false
	}
	return out, true, true
}

// storeElector runs the publisher election in etcd.
type storeElector struct {
	store *storage.Store
	id    string
}

func newElector(store *storage.Store) storeElector {
	host, _ := os.Hostname()
	return storeElector{store: store, id: fmt.Sprintf("%s-%d", host, os.Getpid())}
}

func (e storeElector) Campaign(ctx context.Context) (<-chan struct{}, func(context.Context) error, error) {
	l, err := e.store.Campaign(ctx, "bus-publisher", e.id, 5)
	if err != nil {
		return nil, nil, err
	}
	return l.Done, l.Resign, nil
}

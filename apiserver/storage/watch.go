package storage

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"google.golang.org/grpc/metadata"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var watchSeq atomic.Uint64

// EventType says what happened to a key.
type EventType int

// Event types. Progress carries no key: it says every change up to Revision
// has been delivered.
const (
	Put EventType = iota
	Delete
	Progress
)

// Event is one change of one key, or a progress mark.
type Event struct {
	Type     EventType
	Revision int64
	KV       KV // the new value (Put) or the deleted key with no value (Delete)
	Prev     KV // the value before the change; empty Key when the key is new
	Created  bool
}

// Watcher is a running watch.
type Watcher struct {
	Events <-chan Event
	// Err is set (before Events closes) to the reason the watch ended:
	// ErrCompacted when the start revision was compacted, or the context's error.
	err    *error
	cancel context.CancelFunc
	cli    *clientv3.Client
	ctx    context.Context
}

// Err returns why the watch ended; valid after Events is closed.
func (w *Watcher) Err() error { return *w.err }

// Stop ends the watch.
func (w *Watcher) Stop() { w.cancel() }

// RequestProgress asks etcd for a progress mark on this watch.
func (w *Watcher) RequestProgress() error {
	return w.cli.RequestProgress(w.ctx)
}

// Watch streams every change of keys under prefix from revision from
// (inclusive) on. When from is 0 it starts after the current revision.
func (s *Store) Watch(ctx context.Context, prefix string, from int64) *Watcher {
	// Each watch gets a gRPC stream of its own (distinct metadata): etcd
	// withholds progress marks on a stream while any of its watches starts in
	// the future, so a shared stream would starve every watch of bookmarks.
	ctx = metadata.AppendToOutgoingContext(ctx, "kubebus-watch", strconv.FormatUint(watchSeq.Add(1), 10))
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithPrevKV(), clientv3.WithProgressNotify()}
	if from > 0 {
		opts = append(opts, clientv3.WithRev(from))
	}
	out := make(chan Event, 128)
	var werr error
	w := &Watcher{Events: out, err: &werr, cancel: cancel, cli: s.cli, ctx: ctx}
	wch := s.cli.Watch(ctx, prefix, opts...)
	go func() {
		defer close(out)
		defer cancel()
		for resp := range wch {
			if resp.CompactRevision != 0 {
				werr = fmt.Errorf("watching %s from %d (compacted at %d): %w", prefix, from, resp.CompactRevision, ErrCompacted)
				return
			}
			if err := resp.Err(); err != nil {
				werr = fmt.Errorf("watching %s: %w", prefix, wrapErr(err))
				return
			}
			if resp.IsProgressNotify() {
				select {
				case out <- Event{Type: Progress, Revision: resp.Header.Revision}:
				case <-ctx.Done():
				}
				continue
			}
			for _, ev := range resp.Events {
				e := Event{Revision: ev.Kv.ModRevision, Created: ev.IsCreate()}
				var err error
				if e.KV, err = s.fromStorage(ctx, ev.Kv); err == nil && ev.PrevKv != nil {
					e.Prev, err = s.fromStorage(ctx, ev.PrevKv)
				}
				if err != nil {
					werr = fmt.Errorf("watching %s: %w", prefix, err)
					return
				}
				if ev.Type == mvccpb.DELETE {
					e.Type = Delete
				}
				select {
				case out <- e:
				case <-ctx.Done():
					werr = ctx.Err()
					return
				}
			}
		}
		if werr == nil {
			werr = ctx.Err()
			if werr == nil {
				werr = fmt.Errorf("watching %s: etcd closed the watch", prefix)
			}
		}
	}()
	return w
}

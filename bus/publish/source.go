// Package publish republishes every committed etcd revision under /registry
// onto the bus, in revision order, exactly once, across restarts of the API
// server and of NATS.
//
// Several API servers may run a Publisher; an election in etcd picks one.
// The leader resumes from the revision of the last message in KUBE_HISTORY,
// publishes each change with message ID "r<revision>" (so a retry is
// deduplicated) and with the expected last stream sequence (so a deposed
// leader that still believes it leads cannot interleave its messages). When
// etcd has compacted revisions it never published (NATS was unreachable for
// longer than etcd's history), it publishes a GAP event naming the range
// after reseeding KUBE_STATE from a fresh etcd read, so consumers can tell
// they missed something and heal from the state stream.
package publish

import (
	"context"
	"errors"
)

// ErrCompacted is returned by a Source whose start revision is gone.
var ErrCompacted = errors.New("publish: revision compacted")

// Change is one committed change of one key.
type Change struct {
	// Progress marks carry only Revision: every change up to it was sent.
	Progress     bool
	Delete       bool
	Created      bool // the key did not exist before
	Revision     int64
	Key          string
	Value        []byte // new value (empty for a delete)
	Prev         []byte // value before the change (empty when created)
	PrevRevision int64
}

// KeyValue is one key in a snapshot.
type KeyValue struct {
	Key      string
	Value    []byte
	Revision int64
}

// Source is the publisher's view of etcd.
type Source interface {
	// Changes streams changes of keys under /registry/ from revision from
	// (inclusive) until ctx ends or an error (ErrCompacted when from is
	// gone); wait returns that error after the channel closes.
	Changes(ctx context.Context, from int64) (changes <-chan Change, wait func() error)
	// Snapshot reads every key under /registry/ at the current revision.
	Snapshot(ctx context.Context) (rev int64, kvs []KeyValue, err error)
	// Revision returns etcd's current revision (of any key). The
	// publisher compares it with what it published to tell its lag.
	Revision(ctx context.Context) (int64, error)
}

// Elector runs the election among publishers.
type Elector interface {
	// Campaign blocks until this publisher leads; done closes when the
	// leadership is lost.
	Campaign(ctx context.Context) (done <-chan struct{}, resign func(context.Context) error, err error)
}

package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// StreamLimits bound the streams. JetStream reserves every stream's
// MaxBytes on its store when the stream is created, so the streams never
// grow past the store's limit (nats-server's JetStreamMaxStore): creating
// them fails with "insufficient storage resources" when their limits do
// not fit, instead of the disk filling up later.
type StreamLimits struct {
	MaxAge time.Duration // default 24h
	// MaxBytes bounds KUBE_HISTORY (default 1 GiB); its oldest messages
	// make room for new ones.
	MaxBytes int64
	// NodePodsInMemory keeps KUBE_NODEPODS in memory, bounded by
	// NodeMaxBytes (default DefaultNodeMaxBytes), which counts against
	// the NATS server's JetStream memory limit; its oldest messages make
	// room for new ones (a kubelet that had not read them rebuilds from
	// KUBE_STATE). Otherwise the stream is on disk, bounded by MaxBytes.
	// Only the all-in-one sets it, whose NATS runs in the API server's
	// process and so restarts with the publisher, which then finds the
	// stream empty; a NATS cluster keeps a memory stream's configuration
	// across a restart of every member but not its messages, a loss the
	// publisher cannot yet tell from a healthy stream.
	NodePodsInMemory bool
	NodeMaxBytes     int64
	// StateMaxBytes bounds KUBE_STATE (default MaxBytes). The state stream
	// holds the latest event of every object and must not drop any: when
	// it is full, new messages are refused (DiscardNew) and the publisher
	// stalls, visibly (Publisher.Ready), until it has room again; etcd
	// keeps every change meanwhile.
	StateMaxBytes int64
	Replicas      int // default 1
	// Duplicates is the window in which NATS remembers message IDs to drop
	// a publish retried by the publisher (default DefaultDuplicates). NATS
	// keeps every ID of the window in memory, three per revision of a pod.
	Duplicates time.Duration
}

// DefaultDuplicates is the default deduplication window, NATS's own
// default. The publisher retries a revision within seconds, and a new
// leader resumes from the stream's last message, not from IDs, so a longer
// window only holds more IDs in memory.
const DefaultDuplicates = 2 * time.Minute

// DefaultNodeMaxBytes is KUBE_NODEPODS's default size in memory: about
// 40,000 pod events of 1.6 kB.
//
// KUBE_NODEPODS is better in memory because of how a kubelet reads it: each
// kubelet's consumer is filtered to its own node, and nats-server's file
// store finds such a consumer's next message by walking past, and
// copying, every other node's event since its last one, so a pod event
// cost grew with the number of nodes (bus/informer's
// BenchmarkNodeConsumers: about twice as much at 500 nodes as at 5). The
// memory store walks the same messages without copying them. Nothing is
// lost for good when NATS loses the stream's messages: KUBE_STATE (on
// disk) holds every node's pods, and the publisher announces a GAP on the
// stream (knode._gap) that sends each kubelet back to it.
const DefaultNodeMaxBytes = 64 << 20

func (l *StreamLimits) defaults() {
	if l.MaxAge == 0 {
		l.MaxAge = 24 * time.Hour
	}
	if l.MaxBytes == 0 {
		l.MaxBytes = 1 << 30
	}
	if l.NodeMaxBytes == 0 {
		l.NodeMaxBytes = DefaultNodeMaxBytes
	}
	if l.StateMaxBytes == 0 {
		l.StateMaxBytes = l.MaxBytes
	}
	if l.Replicas == 0 {
		l.Replicas = 1
	}
	if l.Duplicates <= 0 {
		l.Duplicates = DefaultDuplicates
	}
}

// TombstoneTTL is how long a DELETED event stays in KUBE_STATE.
const TombstoneTTL = time.Hour

// streamConfigs are the three streams' configurations under l.
func streamConfigs(l StreamLimits) []jetstream.StreamConfig {
	l.defaults()
	nodeStorage, nodeBytes := jetstream.FileStorage, l.MaxBytes
	if l.NodePodsInMemory {
		nodeStorage, nodeBytes = jetstream.MemoryStorage, l.NodeMaxBytes
	}
	return []jetstream.StreamConfig{
		{Name: HistoryStream, Subjects: []string{historyPrefix + ".>", "kbus.>"}, MaxAge: l.MaxAge, MaxBytes: l.MaxBytes,
			Storage: jetstream.FileStorage, Replicas: l.Replicas, Duplicates: l.Duplicates, AllowDirect: true, Discard: jetstream.DiscardOld},
		{Name: NodePodsStream, Subjects: []string{nodePrefix + ".>"}, MaxAge: l.MaxAge, MaxBytes: nodeBytes,
			Storage: nodeStorage, Replicas: l.Replicas, Duplicates: l.Duplicates, AllowDirect: true, Discard: jetstream.DiscardOld},
		{Name: StateStream, Subjects: []string{statePrefix + ".>", stateNodePrefix + ".>"}, MaxMsgsPerSubject: 1, MaxBytes: l.StateMaxBytes,
			Storage: jetstream.FileStorage, Replicas: l.Replicas, Duplicates: l.Duplicates, AllowMsgTTL: true, AllowDirect: true, Discard: jetstream.DiscardNew},
	}
}

// StreamNames are the names of the three streams.
var StreamNames = []string{HistoryStream, NodePodsStream, StateStream}

// EnsureStreams creates or updates the three streams. A stream whose
// storage type differs from its configuration's (KUBE_NODEPODS on disk,
// as the all-in-one kept it before) cannot be updated in place: it is
// deleted and created again, which the publisher handles as a lost
// stream.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, l StreamLimits) error {
	for _, c := range streamConfigs(l) {
		if err := ensureStorage(ctx, js, c); err != nil {
			return err
		}
		if _, err := js.CreateOrUpdateStream(ctx, c); err != nil {
			return fmt.Errorf("ensuring stream %s: %w", c.Name, err)
		}
	}
	return nil
}

// ensureStorage deletes the stream c names when it exists with another
// storage type.
func ensureStorage(ctx context.Context, js jetstream.JetStream, c jetstream.StreamConfig) error {
	st, err := js.Stream(ctx, c.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("reading stream %s: %w", c.Name, err)
	case st.CachedInfo().Config.Storage == c.Storage:
		return nil
	}
	if err := js.DeleteStream(ctx, c.Name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("deleting stream %s to change its storage to %s: %w", c.Name, c.Storage, err)
	}
	return nil
}

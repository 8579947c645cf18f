package bus

import (
	"context"
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
	// MaxBytes bounds KUBE_HISTORY and KUBE_NODEPODS each (default 1 GiB);
	// their oldest messages make room for new ones.
	MaxBytes int64
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

func (l *StreamLimits) defaults() {
	if l.MaxAge == 0 {
		l.MaxAge = 24 * time.Hour
	}
	if l.MaxBytes == 0 {
		l.MaxBytes = 1 << 30
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
	return []jetstream.StreamConfig{
		{Name: HistoryStream, Subjects: []string{historyPrefix + ".>", "kbus.>"}, MaxAge: l.MaxAge, MaxBytes: l.MaxBytes,
			Storage: jetstream.FileStorage, Replicas: l.Replicas, Duplicates: l.Duplicates, AllowDirect: true, Discard: jetstream.DiscardOld},
		{Name: NodePodsStream, Subjects: []string{nodePrefix + ".>"}, MaxAge: l.MaxAge, MaxBytes: l.MaxBytes,
			Storage: jetstream.FileStorage, Replicas: l.Replicas, Duplicates: l.Duplicates, AllowDirect: true, Discard: jetstream.DiscardOld},
		{Name: StateStream, Subjects: []string{statePrefix + ".>", stateNodePrefix + ".>"}, MaxMsgsPerSubject: 1, MaxBytes: l.StateMaxBytes,
			Storage: jetstream.FileStorage, Replicas: l.Replicas, Duplicates: l.Duplicates, AllowMsgTTL: true, AllowDirect: true, Discard: jetstream.DiscardNew},
	}
}

// StreamNames are the names of the three streams.
var StreamNames = []string{HistoryStream, NodePodsStream, StateStream}

// EnsureStreams creates or updates the three streams.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, l StreamLimits) error {
	for _, c := range streamConfigs(l) {
		if _, err := js.CreateOrUpdateStream(ctx, c); err != nil {
			return fmt.Errorf("ensuring stream %s: %w", c.Name, err)
		}
	}
	return nil
}

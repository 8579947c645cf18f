package bus

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// StreamLimits bound the history streams.
type StreamLimits struct {
	MaxAge   time.Duration // default 24h
	MaxBytes int64         // default 1 GiB
	Replicas int           // default 1
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
	if l.Replicas == 0 {
		l.Replicas = 1
	}
	if l.Duplicates <= 0 {
		l.Duplicates = DefaultDuplicates
	}
}

// TombstoneTTL is how long a DELETED event stays in KUBE_STATE.
const TombstoneTTL = time.Hour

// EnsureStreams creates or updates the three streams.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, l StreamLimits) error {
	l.defaults()
	cfgs := []jetstream.StreamConfig{
		{Name: HistoryStream, Subjects: []string{historyPrefix + ".>", "kbus.>"}, MaxAge: l.MaxAge, MaxBytes: l.MaxBytes,
			Storage: jetstream.FileStorage, Replicas: l.Replicas, Duplicates: l.Duplicates, Discard: jetstream.DiscardOld},
		{Name: NodePodsStream, Subjects: []string{nodePrefix + ".>"}, MaxAge: l.MaxAge, MaxBytes: l.MaxBytes,
			Storage: jetstream.FileStorage, Replicas: l.Replicas, Duplicates: l.Duplicates, Discard: jetstream.DiscardOld},
		{Name: StateStream, Subjects: []string{statePrefix + ".>", stateNodePrefix + ".>"}, MaxMsgsPerSubject: 1,
			Storage: jetstream.FileStorage, Replicas: l.Replicas, Duplicates: l.Duplicates, AllowMsgTTL: true, Discard: jetstream.DiscardOld},
	}
	for _, c := range cfgs {
		if _, err := js.CreateOrUpdateStream(ctx, c); err != nil {
			return fmt.Errorf("ensuring stream %s: %w", c.Name, err)
		}
	}
	return nil
}

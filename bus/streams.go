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
}

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
}

// TombstoneTTL is how long a DELETED event stays in KUBE_STATE.
const TombstoneTTL = time.Hour

// EnsureStreams creates or updates the three streams.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, l StreamLimits) error {
	l.defaults()
	cfgs := []jetstream.StreamConfig{
		{Name: HistoryStream, Subjects: []string{historyPrefix + ".>", "kbus.>"}, MaxAge: l.MaxAge, MaxBytes: l.MaxBytes,
			Storage: jetstream.FileStorage, Replicas: l.Replicas, Duplicates: 10 * time.Minute, Discard: jetstream.DiscardOld},
		{Name: NodePodsStream, Subjects: []string{nodePrefix + ".>"}, MaxAge: l.MaxAge, MaxBytes: l.MaxBytes,
			Storage: jetstream.FileStorage, Replicas: l.Replicas, Duplicates: 10 * time.Minute, Discard: jetstream.DiscardOld},
		{Name: StateStream, Subjects: []string{statePrefix + ".>", stateNodePrefix + ".>"}, MaxMsgsPerSubject: 1,
			Storage: jetstream.FileStorage, Replicas: l.Replicas, Duplicates: 10 * time.Minute, AllowMsgTTL: true, Discard: jetstream.DiscardOld},
	}
	for _, c := range cfgs {
		if _, err := js.CreateOrUpdateStream(ctx, c); err != nil {
			return fmt.Errorf("ensuring stream %s: %w", c.Name, err)
		}
	}
	return nil
}

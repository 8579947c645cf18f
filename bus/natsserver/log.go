package natsserver

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// storeFullFor is how long after NATS last failed to write its store for
// want of space the store counts as full. NATS logs every failed write,
// and the publisher retries within seconds, so a full store keeps the
// mark fresh and one with room again loses it soon.
const storeFullFor = 10 * time.Second

// natsLog passes the NATS server's errors and warnings to slog (its
// notices, which are its start-up banner and routine, at debug), and
// remembers when it last failed to write its store because the disk was
// full: NATS then leaves the publish unanswered and says why only in its
// log.
type natsLog struct {
	log *slog.Logger
	now func() time.Time

	mu       sync.Mutex
	fullAt   time.Time // last "no space left on device"
	fullMsg  string
	reported bool // the current full spell was logged
}

func (l *natsLog) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *natsLog) Debugf(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *natsLog) Tracef(string, ...any)           {}
func (l *natsLog) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l *natsLog) Fatalf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }

func (l *natsLog) Errorf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if !strings.Contains(msg, "no space left on device") {
		l.log.Error(msg)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fullAt, l.fullMsg = l.now(), msg
	if !l.reported {
		// Once per spell: NATS repeats it for every write it fails.
		l.log.Error("the bus's store is full; publishes wait until it has room", "err", msg)
		l.reported = true
	}
}

// storeErr returns why the store counts as full, or nil.
func (l *natsLog) storeErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fullAt.IsZero() || l.now().Sub(l.fullAt) > storeFullFor {
		if l.reported {
			l.log.Info("the bus's store has room again")
			l.reported = false
		}
		return nil
	}
	return errors.New("the bus's store is full (no space left on device): " + l.fullMsg)
}

// clearFull forgets the full store (JetStream was restarted with room).
func (l *natsLog) clearFull() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fullAt = time.Time{}
}

package natsserver

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestStoreFullMark: NATS's "no space left" errors mark the store full
// (logged once per spell, however often NATS repeats it) until none came
// for storeFullFor; other errors pass through and mark nothing.
func TestStoreFullMark(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	now := time.Unix(1000, 0)
	l := &natsLog{log: slog.New(slog.NewTextHandler(&out, nil)), now: func() time.Time { return now }}
	l.Errorf("some other error %d", 1)
	if err := l.storeErr(); err != nil {
		t.Fatalf("another error marked the store full: %v", err)
	}
	for range 3 {
		l.Errorf("JetStream failed to store a msg on stream '%s': write /x/1.blk: no space left on device", "$G > KUBE_STATE")
		now = now.Add(time.Second)
	}
	err := l.storeErr()
	if err == nil || !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), "KUBE_STATE") {
		t.Fatalf("storeErr while full = %v, want the cause", err)
	}
	if n := strings.Count(out.String(), "store is full"); n != 1 {
		t.Errorf("the full store was logged %d times, want once:\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), "some other error 1") {
		t.Errorf("the other error was not passed on:\n%s", out.String())
	}
	now = now.Add(storeFullFor + time.Second)
	if err := l.storeErr(); err != nil {
		t.Fatalf("storeErr after the spell = %v, want nil", err)
	}
	if !strings.Contains(out.String(), "has room again") {
		t.Errorf("the recovery was not logged:\n%s", out.String())
	}
}

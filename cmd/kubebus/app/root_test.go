package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
)

// TestInfoAsDebug: client-go's info lines and its errors about a closed
// connection are debug; its other errors stay errors.
func TestInfoAsDebug(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var b bytes.Buffer
		log := slog.New(infoAsDebug{slog.NewTextHandler(&b, &slog.HandlerOptions{Level: level})})
		log.Info("attempting to acquire leader lease")
		log.Error("Error on socket receive", "err", errors.New("read tcp 127.0.0.1:6443->127.0.0.1:1: use of closed network connection"))
		log.Error("Error on socket receive: use of closed network connection")
		log.Error("watch failed", "err", errors.New("connection refused"))
		out := b.String()
		if !strings.Contains(out, `level=ERROR msg="watch failed"`) {
			t.Errorf("level %v: a real error was lowered:\n%s", level, out)
		}
		lowered := strings.Count(out, "level=DEBUG")
		switch {
		case level == slog.LevelInfo && (lowered != 0 || strings.Count(out, "\n") != 1):
			t.Errorf("level info: debug records were written:\n%s", out)
		case level == slog.LevelDebug && lowered != 3:
			t.Errorf("level debug: %d records lowered, want 3:\n%s", lowered, out)
		}
	}
}

// TestServerRefusesNodePodsOverItsNATSMemory: a KUBE_NODEPODS larger than
// the embedded NATS may keep in memory is refused at the start, before
// anything runs, instead of leaving the publisher retrying.
func TestServerRefusesNodePodsOverItsNATSMemory(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	err := Run(context.Background(), []string{"server", "--data-dir", dir, "--bus-nodepods-max-bytes", "300000000", "--nats-max-memory", "200000000"}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "--bus-nodepods-max-bytes=300000000 does not fit") {
		t.Fatalf("kubebus server: %v, want the limits refused", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("the refused server wrote %d entries into its data directory", len(entries))
	}
}

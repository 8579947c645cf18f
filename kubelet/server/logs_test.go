package server

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"
	"time"
)

// TestCopyLogDrainsAfterStop checks that output written between the last
// read and the moment the container is seen stopped is still sent.
func TestCopyLogDrainsAfterStop(t *testing.T) {
	t.Parallel()
	path := writeLog(t, t.TempDir(), "app.log", "first\n")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var once sync.Once
	running := func() bool {
		once.Do(func() { appendLog(t, path, "last words\n") })
		return false
	}
	var out bytes.Buffer
	if err := copyLog(context.Background(), &out, func() {}, f, running, LogOptions{Follow: true}, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if out.String() != "first\nlast words\n" {
		t.Fatalf("got %q", out.String())
	}
}

// TestCopyLogStopsWithContext checks that a follow of a running container
// ends when its context does.
func TestCopyLogStopsWithContext(t *testing.T) {
	t.Parallel()
	path := writeLog(t, t.TempDir(), "app.log", "first\n")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	flush := func() { cancel() } // cancel once the first output is out
	err = copyLog(ctx, &out, flush, f, func() bool { return true }, LogOptions{Follow: true}, time.Millisecond)
	if err != context.Canceled || out.String() != "first\n" {
		t.Fatalf("got %q, %v; want the content and context.Canceled", out.String(), err)
	}
}

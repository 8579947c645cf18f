package crash

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// panicsOnPurpose is the test hook: its name must show in the logged stack.
func panicsOnPurpose() error { panic("on purpose") }

func TestDoRecoversLogsAndCounts(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	before := Count("test", "do")

	err := Do(log, "test", "do", "ns/name", panicsOnPurpose)

	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("Do returned %v, want an *Error", err)
	}
	if pe.Value != "on purpose" || pe.Component != "test" || pe.Where != "do" {
		t.Errorf("Error = %+v", pe)
	}
	if got := Count("test", "do") - before; got != 1 {
		t.Errorf("kubebus_panics_total{component=test,where=do} rose by %v, want 1", got)
	}
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("one JSON log record wanted: %v\n%s", err, buf.String())
	}
	if rec["level"] != "ERROR" || rec["component"] != "test" || rec["where"] != "do" || rec["key"] != "ns/name" || rec["panic"] != "on purpose" {
		t.Errorf("log record = %v", rec)
	}
	if stack, _ := rec["stack"].(string); !strings.Contains(stack, "crash.panicsOnPurpose") {
		t.Errorf("the logged stack lacks the panicking function:\n%s", stack)
	}
}

func TestDoPassesErrorsThrough(t *testing.T) {
	want := errors.New("plain")
	before := Count("test", "plain")
	if err := Do(slog.New(slog.DiscardHandler), "test", "plain", "", func() error { return want }); err != want {
		t.Errorf("Do = %v, want %v", err, want)
	}
	if err := Do(slog.New(slog.DiscardHandler), "test", "plain", "", func() error { return nil }); err != nil {
		t.Errorf("Do = %v, want nil", err)
	}
	if got := Count("test", "plain") - before; got != 0 {
		t.Errorf("counted %v panics without one", got)
	}
}

func TestRecoverWithoutError(t *testing.T) {
	before := Count("test", "goroutine")
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer Recover(slog.New(slog.DiscardHandler), "test", "goroutine", "", nil)
		panic(errors.New("an error value"))
	}()
	<-done
	if got := Count("test", "goroutine") - before; got != 1 {
		t.Errorf("counted %v panics, want 1", got)
	}
}

func TestRegister(t *testing.T) {
	reg := prometheus.NewRegistry()
	for range 2 {
		if err := Register(reg); err != nil {
			t.Fatalf("Register: %v", err)
		}
	}
	if err := Register(nil); err != nil {
		t.Fatalf("Register(nil): %v", err)
	}
	_ = Do(slog.New(slog.DiscardHandler), "test", "register", "", panicsOnPurpose)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "kubebus_panics_total" {
			return
		}
	}
	t.Error("the registry does not serve kubebus_panics_total")
}

// Package crashtest helps tests check that package crash recovered a
// handler's panic: a log sink the handler's logger writes to while the
// test reads it, and a watch on kubebus_panics_total for one component
// and handler.
package crashtest

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/kubebus/kubebus/internal/crash"
)

// Log is a log sink that is safe to read while workers write to it.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Logger is a JSON slog logger writing to l.
func (l *Log) Logger() *slog.Logger { return slog.New(slog.NewJSONHandler(l, nil)) }

// Contains fails t (without stopping it) for each of wants the log lacks.
func (l *Log) Contains(t testing.TB, wants ...string) {
	t.Helper()
	out := l.String()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s:\n%s", want, out)
		}
	}
}

// Panics watches crash.Count for one component and handler from the
// moment it is made.
type Panics struct {
	component, where string
	before           float64
}

// Watch starts watching the panics recovered at component and where.
func Watch(component, where string) *Panics {
	return &Panics{component: component, where: where, before: crash.Count(component, where)}
}

// Rise is how many panics were recovered there since Watch.
func (p *Panics) Rise() float64 { return crash.Count(p.component, p.where) - p.before }

// Expect fails t (without stopping it) unless exactly want panics were
// recovered there since Watch.
func (p *Panics) Expect(t testing.TB, want float64) {
	t.Helper()
	if got := p.Rise(); got != want {
		t.Errorf("kubebus_panics_total{component=%q,where=%q} rose by %v, want %v", p.component, p.where, got, want)
	}
}

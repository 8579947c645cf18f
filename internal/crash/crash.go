// Package crash recovers panics in the handlers kubebus's components run
// for one piece of work at a time: a controller's reconcile, an admission
// plugin, a scheduling cycle, a kubelet pod sync, the proxy's sync. A
// recovered panic is logged with its stack through log/slog, counted in
// kubebus_panics_total{component,where} and handed back as an *Error, so
// that one bad object costs one failed (and retried) piece of work instead
// of the process. Unlike apimachinery's runtime.HandleCrash it never
// panics again.
package crash

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Error is a recovered panic.
type Error struct {
	Component, Where string
	// Value is what was passed to panic.
	Value any
	// Stack is the panicking goroutine's stack.
	Stack []byte
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s panicked: %v", e.Component, e.Where, e.Value)
}

// panics is the process's one counter: every registry that serves it
// shows the same counts.
var panics = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "kubebus_panics_total",
	Help: "Panics recovered in a handler (the process kept running), by component and handler.",
}, []string{"component", "where"})

// Register has reg serve kubebus_panics_total; registering it again with
// the same registry is not an error. A nil reg is ignored.
func Register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	err := reg.Register(panics)
	if are := (prometheus.AlreadyRegisteredError{}); errors.As(err, &are) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("crash: registering kubebus_panics_total: %w", err)
	}
	return nil
}

// Count is how many panics were recovered at one component and handler.
func Count(component, where string) float64 {
	var m dto.Metric
	if err := panics.WithLabelValues(component, where).Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

// Do calls f and returns its error. A panic in f is recovered, logged with
// its stack and the key being worked on, counted, and returned as an
// *Error.
func Do(log *slog.Logger, component, where, key string, f func() error) (err error) {
	defer Recover(log, component, where, key, &err)
	return f()
}

// Recover, deferred directly (defer crash.Recover(...)), recovers a panic
// of the deferring function as Do does; when errp is not nil it is set to
// the *Error. Without a panic it does nothing.
func Recover(log *slog.Logger, component, where, key string, errp *error) {
	v := recover()
	if v == nil {
		return
	}
	e := Handle(log, component, where, key, v)
	if errp != nil {
		*errp = e
	}
}

// Handle logs and counts v, a value recover returned in a function
// deferred by the panicking one, as Recover does, and returns it as an
// *Error. It is for a handler that names its key only once it has
// panicked, so that the work without a panic never builds the names.
func Handle(log *slog.Logger, component, where, key string, v any) *Error {
	e := &Error{Component: component, Where: where, Value: v, Stack: debug.Stack()}
	panics.WithLabelValues(component, where).Inc()
	if log == nil {
		log = slog.Default()
	}
	log.Error("recovered a panic; the process keeps running",
		"component", component, "where", where, "key", key, "panic", fmt.Sprint(v), "stack", string(e.Stack))
	return e
}

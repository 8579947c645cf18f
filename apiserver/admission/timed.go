package admission

import (
	"context"
	"time"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// Recorder is told how long admission took: each plugin, and each step
// (the mutating plugins together, then the validating ones), with whether
// it rejected the write. The API server's metrics implement it with
// upstream's apiserver_admission_controller_admission_duration_seconds and
// apiserver_admission_step_admission_duration_seconds.
type Recorder interface {
	ObserveAdmissionPlugin(name string, validating bool, op auth.Operation, rejected bool, d time.Duration)
	ObserveAdmissionStep(validating bool, op auth.Operation, rejected bool, d time.Duration)
}

// Plugin is an admitter with the name its metrics carry and whether it
// only validates (it then belongs to the validating step).
type Plugin struct {
	Name       string
	Validating bool
	auth.Admitter
}

// Timed runs its plugins in order as a Chain does, telling Record how long
// each took and how long each step took. The mutating plugins come first:
// the first validating plugin ends the mutating step.
type Timed struct {
	Plugins []Plugin
	Record  Recorder
}

var _ auth.Admitter = Timed{}

// Admit implements auth.Admitter.
func (t Timed) Admit(ctx context.Context, req *auth.AdmissionRequest) error {
	validating := false
	step := time.Now()
	for _, p := range t.Plugins {
		if p.Admitter == nil {
			continue
		}
		if p.Validating && !validating {
			t.Record.ObserveAdmissionStep(false, req.Operation, false, time.Since(step))
			validating, step = true, time.Now()
		}
		start := time.Now()
		err := admitSafely(ctx, p.Admitter, req)
		t.Record.ObserveAdmissionPlugin(p.Name, p.Validating, req.Operation, err != nil, time.Since(start))
		if err != nil {
			t.Record.ObserveAdmissionStep(validating, req.Operation, true, time.Since(step))
			return err
		}
	}
	t.Record.ObserveAdmissionStep(validating, req.Operation, false, time.Since(step))
	return nil
}

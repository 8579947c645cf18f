package admission

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// Observer takes one duration in seconds (prometheus.Observer is one).
type Observer interface {
	Observe(seconds float64)
}

// Recorder hands out the observers of admission's durations: one per
// plugin, operation and outcome, and one per step (the mutating plugins
// together, then the validating ones). The API server's metrics implement
// it with upstream's apiserver_admission_controller_admission_duration_seconds
// and apiserver_admission_step_admission_duration_seconds. A Timed chain
// asks for each observer once and keeps it.
type Recorder interface {
	PluginObserver(name string, validating bool, op auth.Operation, rejected bool) Observer
	StepObserver(validating bool, op auth.Operation, rejected bool) Observer
}

// Plugin is an admitter with the name its metrics and logs carry and
// whether it only validates (it then belongs to the validating step).
// Upstream records a plugin that both mutates and validates under both
// types; a kubebus plugin does both in one call and is recorded once.
type Plugin struct {
	Name       string
	Validating bool
	Admitter   auth.Admitter
}

// Timed runs its plugins in order as a Chain does, recording how long each
// took and how long each step took. The mutating plugins come first: the
// first validating plugin ends the mutating step. Build one with NewTimed.
type Timed struct {
	plugins []timedPlugin
	steps   [2]observers // mutating, validating
	rec     Recorder
	now     func() time.Time
}

type timedPlugin struct {
	Plugin
	obs observers
}

var _ auth.Admitter = (*Timed)(nil)

// NewTimed returns the chain of plugins, recording to rec (nil records
// nothing). Plugins without an admitter are skipped.
func NewTimed(plugins []Plugin, rec Recorder) *Timed {
	t := &Timed{rec: rec, now: time.Now}
	for _, p := range plugins {
		if p.Admitter != nil {
			t.plugins = append(t.plugins, timedPlugin{Plugin: p})
		}
	}
	return t
}

// Admit implements auth.Admitter: both steps, one after the other.
func (t *Timed) Admit(ctx context.Context, req *auth.AdmissionRequest) error {
	if err := t.Mutate(ctx, req); err != nil {
		return err
	}
	return t.Validate(ctx, req)
}

// Mutate runs the first step: the plugins that may change the object.
// The API server then prepares and validates the object as it will be
// stored before it runs Validate, as upstream does between its mutating
// and validating admission.
func (t *Timed) Mutate(ctx context.Context, req *auth.AdmissionRequest) error {
	return t.run(ctx, req, false)
}

// Validate runs the second step: the plugins that only validate.
func (t *Timed) Validate(ctx context.Context, req *auth.AdmissionRequest) error {
	return t.run(ctx, req, true)
}

// run runs the plugins of one step in order, recording each and the step
// (a validating step without plugins is not recorded).
func (t *Timed) run(ctx context.Context, req *auth.AdmissionRequest, validating bool) error {
	var step time.Time
	ran := false
	for i := range t.plugins {
		p := &t.plugins[i]
		if p.Validating != validating {
			continue
		}
		if t.rec == nil {
			if err := admitSafely(ctx, p.Name, p.Admitter, req); err != nil {
				return err
			}
			continue
		}
		if !ran {
			ran, step = true, t.now()
		}
		start := t.now()
		err := admitSafely(ctx, p.Name, p.Admitter, req)
		p.obs.get(req.Operation, err != nil, func() Observer {
			return t.rec.PluginObserver(p.Name, p.Validating, req.Operation, err != nil)
		}).Observe(t.now().Sub(start).Seconds())
		if err != nil {
			t.observeStep(validating, req.Operation, true, step)
			return err
		}
	}
	if t.rec != nil && (ran || !validating) {
		if !ran {
			step = t.now()
		}
		t.observeStep(validating, req.Operation, false, step)
	}
	return nil
}

func (t *Timed) observeStep(validating bool, op auth.Operation, rejected bool, since time.Time) {
	i := 0
	if validating {
		i = 1
	}
	t.steps[i].get(op, rejected, func() Observer {
		return t.rec.StepObserver(validating, op, rejected)
	}).Observe(t.now().Sub(since).Seconds())
}

// observers keeps one Observer per operation and outcome, made on first
// use. Two requests racing on a slot both make it: the recorder hands out
// the same observer for the same labels, so either may stay.
type observers [len(operations)][2]atomic.Pointer[Observer]

// operations are the operations observers keep a slot for.
var operations = [...]auth.Operation{auth.Create, auth.Update, auth.Delete, auth.Connect}

func (o *observers) get(op auth.Operation, rejected bool, newObs func() Observer) Observer {
	i := -1
	for j, known := range operations {
		if op == known {
			i = j
			break
		}
	}
	if i < 0 {
		return newObs() // an operation without a slot: not kept
	}
	r := 0
	if rejected {
		r = 1
	}
	if p := o[i][r].Load(); p != nil {
		return *p
	}
	obs := newObs()
	o[i][r].Store(&obs)
	return obs
}

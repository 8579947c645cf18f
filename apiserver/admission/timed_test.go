package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// recorded keeps what a Timed chain observed, as "labels seconds" lines,
// and how many observers it asked for.
type recorded struct {
	plugins, steps []string
	made           int
}

type lineObserver struct {
	to     *[]string
	labels string
}

func (o lineObserver) Observe(s float64) { *o.to = append(*o.to, fmt.Sprintf("%s %g", o.labels, s)) }

func (r *recorded) PluginObserver(name string, validating bool, op auth.Operation, rejected bool) Observer {
	r.made++
	return lineObserver{&r.plugins, fmt.Sprintf("%s validating=%t %s rejected=%t", name, validating, op, rejected)}
}

func (r *recorded) StepObserver(validating bool, op auth.Operation, rejected bool) Observer {
	r.made++
	return lineObserver{&r.steps, fmt.Sprintf("validating=%t %s rejected=%t", validating, op, rejected)}
}

// fakeClock moves only when a plugin spends time.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// TestTimedRecordsPluginsAndSteps: every plugin that runs is recorded by
// name with the time it took, the mutating plugins and the validating ones
// are one step each (a step's time is its own plugins' and no other's), a
// rejection ends the chain and is recorded as such, and a panic is a
// rejection like any other.
func TestTimedRecordsPluginsAndSteps(t *testing.T) {
	t.Parallel()
	errDenied := errors.New("denied")
	var order []string
	var clock fakeClock
	// plugin takes seconds of the fake clock and answers err.
	plugin := func(name string, validating bool, seconds int, err error) Plugin {
		return Plugin{Name: name, Validating: validating, Admitter: admitFunc(func(context.Context, *auth.AdmissionRequest) error {
			order = append(order, name)
			clock.t = clock.t.Add(time.Duration(seconds) * time.Second)
			return err
		})}
	}
	boom := Plugin{Name: "Boom", Admitter: admitFunc(func(context.Context, *auth.AdmissionRequest) error {
		clock.t = clock.t.Add(time.Second)
		panic("on purpose")
	})}

	for _, tc := range []struct {
		name         string
		plugins      []Plugin
		wantErr      bool
		wantOrder    []string
		wantPlugins  []string
		wantSteps    []string
		wantInternal bool
	}{{
		name:        "all admit",
		plugins:     []Plugin{plugin("A", false, 1, nil), {Name: "Off"}, plugin("B", false, 2, nil), plugin("V", true, 4, nil)},
		wantOrder:   []string{"A", "B", "V"},
		wantPlugins: []string{"A validating=false CREATE rejected=false 1", "B validating=false CREATE rejected=false 2", "V validating=true CREATE rejected=false 4"},
		wantSteps:   []string{"validating=false CREATE rejected=false 3", "validating=true CREATE rejected=false 4"},
	}, {
		name:        "a mutating plugin rejects",
		plugins:     []Plugin{plugin("A", false, 1, errDenied), plugin("B", false, 2, nil), plugin("V", true, 4, nil)},
		wantErr:     true,
		wantOrder:   []string{"A"},
		wantPlugins: []string{"A validating=false CREATE rejected=true 1"},
		wantSteps:   []string{"validating=false CREATE rejected=true 1"},
	}, {
		name:        "a validating plugin rejects",
		plugins:     []Plugin{plugin("A", false, 1, nil), plugin("V", true, 2, errDenied), plugin("W", true, 4, nil)},
		wantErr:     true,
		wantOrder:   []string{"A", "V"},
		wantPlugins: []string{"A validating=false CREATE rejected=false 1", "V validating=true CREATE rejected=true 2"},
		wantSteps:   []string{"validating=false CREATE rejected=false 1", "validating=true CREATE rejected=true 2"},
	}, {
		name:         "a plugin panics",
		plugins:      []Plugin{boom, plugin("V", true, 2, nil)},
		wantErr:      true,
		wantInternal: true,
		wantPlugins:  []string{"Boom validating=false CREATE rejected=true 1"},
		wantSteps:    []string{"validating=false CREATE rejected=true 1"},
	}} {
		order = nil
		var rec recorded
		timed := NewTimed(tc.plugins, &rec)
		timed.now = clock.now
		err := timed.Admit(context.Background(), podCreate())
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: Admit = %v, want an error: %t", tc.name, err, tc.wantErr)
		}
		if tc.wantInternal && !apierrors.IsInternalError(err) {
			t.Errorf("%s: Admit = %v, want an InternalError", tc.name, err)
		}
		if !slices.Equal(order, tc.wantOrder) {
			t.Errorf("%s: ran %v, want %v", tc.name, order, tc.wantOrder)
		}
		if !slices.Equal(rec.plugins, tc.wantPlugins) {
			t.Errorf("%s: plugins recorded %q, want %q", tc.name, rec.plugins, tc.wantPlugins)
		}
		if !slices.Equal(rec.steps, tc.wantSteps) {
			t.Errorf("%s: steps recorded %q, want %q", tc.name, rec.steps, tc.wantSteps)
		}
	}
}

// TestTimedKeepsItsObservers: a chain asks its recorder for each
// observer once, however many writes it admits, and with no recorder it
// still admits and rejects.
func TestTimedKeepsItsObservers(t *testing.T) {
	t.Parallel()
	var rec recorded
	plugins := []Plugin{
		{Name: "A", Admitter: admitFunc(func(context.Context, *auth.AdmissionRequest) error { return nil })},
		{Name: "V", Validating: true, Admitter: admitFunc(func(context.Context, *auth.AdmissionRequest) error { return nil })},
	}
	timed := NewTimed(plugins, &rec)
	for range 5 {
		if err := timed.Admit(context.Background(), podCreate()); err != nil {
			t.Fatal(err)
		}
	}
	if rec.made != 4 || len(rec.plugins) != 10 || len(rec.steps) != 10 {
		t.Errorf("5 writes: %d observers made (want 4: two plugins, two steps), %d plugin and %d step observations (want 10 each)", rec.made, len(rec.plugins), len(rec.steps))
	}

	errDenied := errors.New("denied")
	quiet := NewTimed([]Plugin{{Name: "No", Admitter: admitFunc(func(context.Context, *auth.AdmissionRequest) error { return errDenied })}}, nil)
	if err := quiet.Admit(context.Background(), podCreate()); !errors.Is(err, errDenied) {
		t.Errorf("without a recorder: Admit = %v, want the plugin's error", err)
	}
}

// TestBuildPluginsOrderAndSteps: BuildPlugins orders the plugins as Build
// does and marks the validating ones.
func TestBuildPluginsOrderAndSteps(t *testing.T) {
	t.Parallel()
	plugins, err := BuildPlugins([]string{PluginResourceQuota, PluginNamespaceLifecycle, PluginPodSecurity, PluginPriority}, Deps{
		Namespaces: namespaceMap{},
		Factories: map[string]func() (auth.Admitter, error){
			PluginResourceQuota: func() (auth.Admitter, error) { return Chain{}, nil },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range plugins {
		got = append(got, fmt.Sprintf("%s/%t", p.Name, p.Validating))
	}
	want := []string{"NamespaceLifecycle/false", "Priority/false", "ResourceQuota/true", "PodSecurity/true"}
	if !slices.Equal(got, want) {
		t.Errorf("BuildPlugins = %v, want %v", got, want)
	}
}

// TestTimedSlotsByOperationAndOutcome: one chain admitting, refusing and
// updating keeps each outcome and operation under its own labels, after
// the first write has bound its observers.
func TestTimedSlotsByOperationAndOutcome(t *testing.T) {
	t.Parallel()
	errDenied := errors.New("denied")
	refuse := false
	var rec recorded
	timed := NewTimed([]Plugin{
		{Name: "A", Admitter: admitFunc(func(context.Context, *auth.AdmissionRequest) error { return nil })},
		{Name: "V", Validating: true, Admitter: admitFunc(func(context.Context, *auth.AdmissionRequest) error {
			if refuse {
				return errDenied
			}
			return nil
		})},
	}, &rec)
	var clock fakeClock
	timed.now = clock.now
	update := podCreate()
	update.Operation = auth.Update
	for _, step := range []struct {
		req    *auth.AdmissionRequest
		refuse bool
	}{{podCreate(), false}, {podCreate(), true}, {update, false}, {podCreate(), false}, {update, true}} {
		refuse = step.refuse
		if err := timed.Admit(context.Background(), step.req); (err != nil) != step.refuse {
			t.Fatalf("%s refused=%t: Admit = %v", step.req.Operation, step.refuse, err)
		}
	}
	wantPlugins := []string{
		"A validating=false CREATE rejected=false 0", "V validating=true CREATE rejected=false 0",
		"A validating=false CREATE rejected=false 0", "V validating=true CREATE rejected=true 0",
		"A validating=false UPDATE rejected=false 0", "V validating=true UPDATE rejected=false 0",
		"A validating=false CREATE rejected=false 0", "V validating=true CREATE rejected=false 0",
		"A validating=false UPDATE rejected=false 0", "V validating=true UPDATE rejected=true 0",
	}
	if !slices.Equal(rec.plugins, wantPlugins) {
		t.Errorf("plugins recorded\n%q\nwant\n%q", rec.plugins, wantPlugins)
	}
	wantSteps := []string{
		"validating=false CREATE rejected=false 0", "validating=true CREATE rejected=false 0",
		"validating=false CREATE rejected=false 0", "validating=true CREATE rejected=true 0",
		"validating=false UPDATE rejected=false 0", "validating=true UPDATE rejected=false 0",
		"validating=false CREATE rejected=false 0", "validating=true CREATE rejected=false 0",
		"validating=false UPDATE rejected=false 0", "validating=true UPDATE rejected=true 0",
	}
	if !slices.Equal(rec.steps, wantSteps) {
		t.Errorf("steps recorded\n%q\nwant\n%q", rec.steps, wantSteps)
	}
	// Observers for: A CREATE ok, V CREATE ok, V CREATE refused, A UPDATE ok,
	// V UPDATE ok, V UPDATE refused; steps: admit CREATE ok, validate
	// CREATE ok, validate CREATE refused, admit UPDATE ok, validate UPDATE
	// ok, validate UPDATE refused.
	if rec.made != 12 {
		t.Errorf("%d observers made, want 12 (one per plugin or step, operation and outcome)", rec.made)
	}
}

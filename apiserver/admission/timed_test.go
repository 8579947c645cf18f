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

// recorded keeps what a Timed chain reported, as text.
type recorded struct{ plugins, steps []string }

func (r *recorded) ObserveAdmissionPlugin(name string, validating bool, op auth.Operation, rejected bool, d time.Duration) {
	if d < 0 {
		panic("negative duration")
	}
	r.plugins = append(r.plugins, fmt.Sprintf("%s validating=%t %s rejected=%t", name, validating, op, rejected))
}

func (r *recorded) ObserveAdmissionStep(validating bool, op auth.Operation, rejected bool, d time.Duration) {
	if d < 0 {
		panic("negative duration")
	}
	r.steps = append(r.steps, fmt.Sprintf("validating=%t %s rejected=%t", validating, op, rejected))
}

// TestTimedRecordsPluginsAndSteps: every plugin that runs is recorded by
// name, the mutating plugins and the validating ones are one step each,
// a rejection ends the chain and is recorded as such, and a panic is a
// rejection like any other.
func TestTimedRecordsPluginsAndSteps(t *testing.T) {
	t.Parallel()
	errDenied := errors.New("denied")
	var order []string
	plugin := func(name string, validating bool, err error) Plugin {
		return Plugin{Name: name, Validating: validating, Admitter: admitFunc(func(context.Context, *auth.AdmissionRequest) error {
			order = append(order, name)
			return err
		})}
	}
	boom := Plugin{Name: "Boom", Admitter: admitFunc(func(context.Context, *auth.AdmissionRequest) error { panic("on purpose") })}

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
		plugins:     []Plugin{plugin("A", false, nil), {Name: "Off"}, plugin("B", false, nil), plugin("V", true, nil)},
		wantOrder:   []string{"A", "B", "V"},
		wantPlugins: []string{"A validating=false CREATE rejected=false", "B validating=false CREATE rejected=false", "V validating=true CREATE rejected=false"},
		wantSteps:   []string{"validating=false CREATE rejected=false", "validating=true CREATE rejected=false"},
	}, {
		name:        "a mutating plugin rejects",
		plugins:     []Plugin{plugin("A", false, errDenied), plugin("B", false, nil), plugin("V", true, nil)},
		wantErr:     true,
		wantOrder:   []string{"A"},
		wantPlugins: []string{"A validating=false CREATE rejected=true"},
		wantSteps:   []string{"validating=false CREATE rejected=true"},
	}, {
		name:        "a validating plugin rejects",
		plugins:     []Plugin{plugin("A", false, nil), plugin("V", true, errDenied), plugin("W", true, nil)},
		wantErr:     true,
		wantOrder:   []string{"A", "V"},
		wantPlugins: []string{"A validating=false CREATE rejected=false", "V validating=true CREATE rejected=true"},
		wantSteps:   []string{"validating=false CREATE rejected=false", "validating=true CREATE rejected=true"},
	}, {
		name:         "a plugin panics",
		plugins:      []Plugin{boom, plugin("V", true, nil)},
		wantErr:      true,
		wantInternal: true,
		wantPlugins:  []string{"Boom validating=false CREATE rejected=true"},
		wantSteps:    []string{"validating=false CREATE rejected=true"},
	}} {
		order = nil
		var rec recorded
		err := Timed{Plugins: tc.plugins, Record: &rec}.Admit(context.Background(), podCreate())
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

package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/kubebus/kubebus/scheduler/framework"
	"github.com/kubebus/kubebus/scheduler/plugins/balancedallocation"
	"github.com/kubebus/kubebus/scheduler/plugins/imagelocality"
	"github.com/kubebus/kubebus/scheduler/plugins/interpodaffinity"
	"github.com/kubebus/kubebus/scheduler/plugins/nodeaffinity"
	"github.com/kubebus/kubebus/scheduler/plugins/nodename"
	"github.com/kubebus/kubebus/scheduler/plugins/nodeports"
	"github.com/kubebus/kubebus/scheduler/plugins/noderesources"
	"github.com/kubebus/kubebus/scheduler/plugins/nodeunschedulable"
	"github.com/kubebus/kubebus/scheduler/plugins/podtopologyspread"
	"github.com/kubebus/kubebus/scheduler/plugins/tainttoleration"
	"github.com/kubebus/kubebus/scheduler/plugins/volumebinding"
)

// DefaultPreemption is the name of the preemption PostFilter.
const DefaultPreemption = "DefaultPreemption"

// Plugins the I/O shell provides itself (queue sort by priority, the
// scheduling gates check, binding through pods/binding): configurations
// may name them at their extension points; they build nothing here.
var shellPlugins = []string{"PrioritySort", "SchedulingGates", "DefaultBinder"}

// Upstream plugins kubebus does not implement. They may be disabled (as
// copied configurations often do) but not enabled.
var unimplemented = []string{"VolumeRestrictions", "VolumeZone", "NodeVolumeLimits", "DynamicResources", "NodeDeclaredFeatures", "GangScheduling"}

// defaultMultiPoint is upstream's default plugin list (v1), in order, with
// the score weights, restricted to what kubebus has.
func defaultMultiPoint() []Plugin {
	w := func(n int32) *int32 { return &n }
	return []Plugin{
		{Name: "SchedulingGates"},
		{Name: "PrioritySort"},
		{Name: nodeunschedulable.Name},
		{Name: nodename.Name},
		{Name: tainttoleration.Name, Weight: w(3)},
		{Name: nodeaffinity.Name, Weight: w(2)},
		{Name: nodeports.Name},
		{Name: noderesources.Name, Weight: w(1)},
		{Name: volumebinding.Name},
		{Name: podtopologyspread.Name, Weight: w(2)},
		{Name: interpodaffinity.Name, Weight: w(2)},
		{Name: DefaultPreemption},
		{Name: balancedallocation.Name, Weight: w(1)},
		{Name: imagelocality.Name, Weight: w(1)},
		{Name: "DefaultBinder"},
	}
}

// factory builds a plugin from its (JSON) arguments, which may be empty.
type factory func(args []byte) (framework.Plugin, error)

// inTree returns the plugins kubebus implements, by name.
func inTree() map[string]factory {
	return map[string]factory{
		nodeunschedulable.Name: noArgs(func() framework.Plugin { return nodeunschedulable.New() }),
		nodename.Name:          noArgs(func() framework.Plugin { return nodename.New() }),
		tainttoleration.Name:   noArgs(func() framework.Plugin { return tainttoleration.New() }),
		nodeports.Name:         noArgs(func() framework.Plugin { return nodeports.New() }),
		imagelocality.Name:     noArgs(func() framework.Plugin { return imagelocality.New() }),
		nodeaffinity.Name: withArgs(func(a nodeaffinity.Args) (framework.Plugin, error) {
			return nodeaffinity.New(a), nil
		}),
		noderesources.Name: withArgs(func(a noderesources.FitArgs) (framework.Plugin, error) {
			return noderesources.New(a)
		}),
		balancedallocation.Name: withArgs(func(a balancedallocation.Args) (framework.Plugin, error) {
			return balancedallocation.New(a)
		}),
		interpodaffinity.Name: withArgs(func(a interpodaffinity.Args) (framework.Plugin, error) {
			return interpodaffinity.New(a)
		}),
		podtopologyspread.Name: withArgs(func(a podtopologyspread.Args) (framework.Plugin, error) {
			return podtopologyspread.New(a)
		}),
		volumebinding.Name: withArgs(func(a volumebinding.Args) (framework.Plugin, error) {
			return volumebinding.New(a)
		}),
	}
}

func noArgs(f func() framework.Plugin) factory {
	return func(args []byte) (framework.Plugin, error) {
		if len(bytes.TrimSpace(args)) > 0 && !bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(args, &m); err != nil {
				return nil, err
			}
			delete(m, "apiVersion")
			delete(m, "kind")
			if len(m) > 0 {
				return nil, errors.New("the plugin takes no arguments")
			}
		}
		return f(), nil
	}
}

func withArgs[A any](f func(A) (framework.Plugin, error)) factory {
	return func(args []byte) (framework.Plugin, error) {
		var a A
		if err := decodeArgs(args, &a); err != nil {
			return nil, err
		}
		return f(a)
	}
}

// decodeArgs decodes plugin arguments strictly, ignoring apiVersion and
// kind (upstream files often carry them).
func decodeArgs(args []byte, into any) error {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return err
	}
	delete(m, "apiVersion")
	delete(m, "kind")
	clean, _ := json.Marshal(m)
	dec := json.NewDecoder(bytes.NewReader(clean))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

// BuildProfiles builds the framework profile of every configured profile, by
// scheduler name. Call it on a configuration from Load or Default.
func (c *Configuration) BuildProfiles() (map[string]*framework.Profile, error) {
	out := make(map[string]*framework.Profile, len(c.Profiles))
	for i := range c.Profiles {
		p, err := c.buildProfile(i)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		out[p.SchedulerName] = p
	}
	return out, nil
}

// point is an extension point a profile is built for.
type point struct {
	name       string
	set        func(*Plugins) PluginSet
	implements func(framework.Plugin) bool
}

var points = []point{
	{"preFilter", func(p *Plugins) PluginSet { return p.PreFilter }, is[framework.PreFilterPlugin]},
	{"filter", func(p *Plugins) PluginSet { return p.Filter }, is[framework.FilterPlugin]},
	{"preScore", func(p *Plugins) PluginSet { return p.PreScore }, is[framework.PreScorePlugin]},
	{"score", func(p *Plugins) PluginSet { return p.Score }, is[framework.ScorePlugin]},
	{"reserve", func(p *Plugins) PluginSet { return p.Reserve }, is[framework.ReservePlugin]},
	{"preBind", func(p *Plugins) PluginSet { return p.PreBind }, is[framework.PreBindPlugin]},
}

func is[T any](p framework.Plugin) bool { _, ok := p.(T); return ok }

func (c *Configuration) buildProfile(i int) (*framework.Profile, error) {
	cp := &c.Profiles[i]
	path := fmt.Sprintf("profiles[%d]", i)
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	plugins := cp.Plugins
	if plugins == nil {
		plugins = &Plugins{}
	}
	registry := inTree()
	known := func(name string) bool {
		_, ok := registry[name]
		return ok || name == DefaultPreemption || slices.Contains(shellPlugins, name)
	}
	names := make([]string, 0, len(registry)+1)
	for n := range registry {
		names = append(names, n)
	}
	names = append(names, DefaultPreemption)
	sort.Strings(names)

	// Check every name, weight and duplicate up front.
	sets := map[string]PluginSet{
		"preEnqueue": plugins.PreEnqueue, "queueSort": plugins.QueueSort, "preFilter": plugins.PreFilter,
		"filter": plugins.Filter, "postFilter": plugins.PostFilter, "preScore": plugins.PreScore, "score": plugins.Score,
		"reserve": plugins.Reserve, "permit": plugins.Permit, "preBind": plugins.PreBind, "bind": plugins.Bind,
		"postBind": plugins.PostBind, "multiPoint": plugins.MultiPoint,
	}
	setNames := make([]string, 0, len(sets))
	for n := range sets {
		setNames = append(setNames, n)
	}
	sort.Strings(setNames)
	for _, sn := range setNames {
		set := sets[sn]
		seen := map[string]bool{}
		for j, pl := range set.Enabled {
			fp := fmt.Sprintf("%s.plugins.%s.enabled[%d]", path, sn, j)
			switch {
			case slices.Contains(unimplemented, pl.Name):
				bad("%s: plugin %q is not implemented by kubebus", fp, pl.Name)
			case !known(pl.Name):
				bad("%s: unknown plugin %q (known: %v)", fp, pl.Name, names)
			}
			if seen[pl.Name] {
				bad("%s: plugin %q is enabled twice", fp, pl.Name)
			}
			seen[pl.Name] = true
			if pl.Weight != nil && *pl.Weight < 0 {
				bad("%s.weight: %d must not be negative", fp, *pl.Weight)
			}
			if pl.Weight != nil && *pl.Weight > 100 {
				bad("%s.weight: %d is greater than 100", fp, *pl.Weight)
			}
		}
		for j, pl := range set.Disabled {
			if pl.Name != "*" && !known(pl.Name) && !slices.Contains(unimplemented, pl.Name) {
				bad("%s.plugins.%s.disabled[%d]: unknown plugin %q (known: %v)", path, sn, j, pl.Name, names)
			}
		}
	}

	// Arguments.
	args := map[string][]byte{}
	for j, pc := range cp.PluginConfig {
		fp := fmt.Sprintf("%s.pluginConfig[%d]", path, j)
		if !known(pc.Name) {
			bad("%s.name: unknown plugin %q", fp, pc.Name)
			continue
		}
		if _, dup := args[pc.Name]; dup {
			bad("%s.name: %q is configured twice", fp, pc.Name)
		}
		args[pc.Name] = pc.Args
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	multi := mergeSet(defaultMultiPoint(), plugins.MultiPoint)
	instances := map[string]framework.Plugin{}
	instance := func(name string) (framework.Plugin, bool) {
		if pl, ok := instances[name]; ok {
			return pl, true
		}
		f, ok := registry[name]
		if !ok {
			return nil, false
		}
		pl, err := f(args[name])
		if err != nil {
			bad("%s.pluginConfig: %s: %v", path, name, err)
			return nil, false
		}
		instances[name] = pl
		return pl, true
	}

	prof := &framework.Profile{}
	if c.PercentageOfNodesToScore != nil {
		prof.PercentageOfNodesToScore = *c.PercentageOfNodesToScore
	}
	if cp.SchedulerName != nil {
		prof.SchedulerName = *cp.SchedulerName
	}
	if cp.PercentageOfNodesToScore != nil {
		prof.PercentageOfNodesToScore = *cp.PercentageOfNodesToScore
	}
	for _, pt := range points {
		for _, e := range expand(multi, pt.set(plugins)) {
			pl, ok := instance(e.plugin.Name)
			if !ok {
				continue
			}
			if !pt.implements(pl) {
				if e.explicit {
					bad("%s.plugins.%s: plugin %q does not implement %s", path, pt.name, e.plugin.Name, pt.name)
				}
				continue
			}
			switch pt.name {
			case "preFilter":
				prof.PreFilter = append(prof.PreFilter, pl.(framework.PreFilterPlugin))
			case "filter":
				prof.Filter = append(prof.Filter, pl.(framework.FilterPlugin))
			case "preScore":
				prof.PreScore = append(prof.PreScore, pl.(framework.PreScorePlugin))
			case "score":
				w := int64(1)
				if e.plugin.Weight != nil && *e.plugin.Weight > 0 {
					w = int64(*e.plugin.Weight)
				}
				prof.Score = append(prof.Score, framework.WeightedScorePlugin{ScorePlugin: pl.(framework.ScorePlugin), Weight: w})
			case "reserve":
				prof.Reserve = append(prof.Reserve, pl.(framework.ReservePlugin))
			case "preBind":
				prof.PreBind = append(prof.PreBind, pl.(framework.PreBindPlugin))
			}
		}
	}
	for _, e := range expand(multi, plugins.PostFilter) {
		if e.plugin.Name != DefaultPreemption {
			if _, ok := registry[e.plugin.Name]; ok && e.explicit {
				bad("%s.plugins.postFilter: plugin %q does not implement postFilter", path, e.plugin.Name)
			}
			continue
		}
		pa := framework.PreemptionArgs{MinCandidateNodesPercentage: 10, MinCandidateNodesAbsolute: 100}
		if err := decodeArgs(args[DefaultPreemption], &pa); err != nil {
			bad("%s.pluginConfig: %s: %v", path, DefaultPreemption, err)
		} else if err := validatePreemption(pa); err != nil {
			bad("%s.pluginConfig: %s: %v", path, DefaultPreemption, err)
		}
		prof.Preemption = &pa
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return prof, nil
}

func validatePreemption(a framework.PreemptionArgs) error {
	var errs []error
	if a.MinCandidateNodesPercentage < 0 || a.MinCandidateNodesPercentage > 100 {
		errs = append(errs, fmt.Errorf("minCandidateNodesPercentage: %d is not in [0, 100]", a.MinCandidateNodesPercentage))
	}
	if a.MinCandidateNodesAbsolute < 0 {
		errs = append(errs, fmt.Errorf("minCandidateNodesAbsolute: %d must not be negative", a.MinCandidateNodesAbsolute))
	}
	if a.MinCandidateNodesPercentage == 0 && a.MinCandidateNodesAbsolute == 0 {
		errs = append(errs, errors.New("minCandidateNodesPercentage and minCandidateNodesAbsolute must not both be zero"))
	}
	return errors.Join(errs...)
}

// mergeSet applies a user's set to defaults as upstream does: defaults
// stay in order unless disabled (or all disabled with "*"); a default the
// user enables again is replaced in place (taking the user's weight); the
// user's other plugins follow.
func mergeSet(defaults []Plugin, user PluginSet) []Plugin {
	disabled := map[string]bool{}
	for _, p := range user.Disabled {
		disabled[p.Name] = true
	}
	custom := map[string]int{}
	for i, p := range user.Enabled {
		custom[p.Name] = i
	}
	replaced := map[int]bool{}
	var out []Plugin
	if !disabled["*"] {
		for _, d := range defaults {
			if disabled[d.Name] {
				continue
			}
			if i, ok := custom[d.Name]; ok {
				d = user.Enabled[i]
				replaced[i] = true
			}
			out = append(out, d)
		}
	}
	for i, p := range user.Enabled {
		if !replaced[i] {
			out = append(out, p)
		}
	}
	return out
}

type entry struct {
	plugin   Plugin
	explicit bool // named at the point itself, so it must implement it
}

// expand lists the plugins enabled at one extension point: those named
// there (which override multiPoint's entry of the same name, keeping their
// order first), then multiPoint's other plugins not disabled there, then
// the point's remaining plugins. Disabling "*" at the point drops every
// multiPoint plugin.
func expand(multi []Plugin, set PluginSet) []entry {
	var out []entry
	explicit := map[string]bool{}
	for _, p := range set.Enabled {
		explicit[p.Name] = true
	}
	disabled := map[string]bool{}
	for _, p := range set.Disabled {
		disabled[p.Name] = true
	}
	inMulti := map[string]bool{}
	if !disabled["*"] {
		for _, p := range multi {
			if !disabled[p.Name] {
				inMulti[p.Name] = true
			}
		}
	}
	// Part 1: overrides, in the point's order.
	for _, p := range set.Enabled {
		if inMulti[p.Name] {
			out = append(out, entry{p, true})
		}
	}
	// Part 2: multiPoint's plugins not overridden.
	if !disabled["*"] {
		for _, p := range multi {
			if !disabled[p.Name] && !explicit[p.Name] {
				out = append(out, entry{p, false})
			}
		}
	}
	// Part 3: the point's own plugins not in multiPoint.
	for _, p := range set.Enabled {
		if !inMulti[p.Name] {
			out = append(out, entry{p, true})
		}
	}
	return out
}

// Package podtopologyspread spreads matching pods over topology domains
// (zones, hosts, …): constraints with whenUnsatisfiable DoNotSchedule are
// a filter (a node is rejected when placing the pod there would make its
// domain exceed the least-populated domain by more than maxSkew), and
// ScheduleAnyway constraints a score. Pods without constraints get the
// profile's default constraints, with the selector built from the
// workloads that select them (Snapshot.DefaultSpreadSelector).
package podtopologyspread

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/kubebus/kubebus/scheduler/framework"
)

// Name is the plugin's name in configuration.
const Name = "PodTopologySpread"

const (
	// ErrReasonConstraintsNotMatch: the skew would exceed maxSkew.
	ErrReasonConstraintsNotMatch = "node(s) didn't match pod topology spread constraints"
	// ErrReasonNodeLabelNotMatch: the node lacks a constraint's topology key.
	ErrReasonNodeLabelNotMatch = ErrReasonConstraintsNotMatch + " (missing required label)"
)

// DefaultingType selects the default constraints.
type DefaultingType string

const (
	// SystemDefaulting: spread over hostnames (maxSkew 3) and zones
	// (maxSkew 5), both ScheduleAnyway.
	SystemDefaulting DefaultingType = "System"
	// ListDefaulting: Args.DefaultConstraints.
	ListDefaulting DefaultingType = "List"
)

// SystemDefaultConstraints are upstream's built-in defaults.
var SystemDefaultConstraints = []v1.TopologySpreadConstraint{
	{TopologyKey: v1.LabelHostname, WhenUnsatisfiable: v1.ScheduleAnyway, MaxSkew: 3},
	{TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.ScheduleAnyway, MaxSkew: 5},
}

// Args are the plugin's arguments (PodTopologySpreadArgs).
type Args struct {
	// DefaultConstraints apply to pods without constraints when
	// DefaultingType is List. They must not set a labelSelector.
	DefaultConstraints []v1.TopologySpreadConstraint `json:"defaultConstraints,omitempty"`
	// DefaultingType is System (the default) or List.
	DefaultingType DefaultingType `json:"defaultingType,omitempty"`
}

// Validate checks the arguments.
func (a *Args) Validate() error {
	var errs []error
	switch a.DefaultingType {
	case "", SystemDefaulting:
		if len(a.DefaultConstraints) > 0 {
			errs = append(errs, errors.New("defaultConstraints: must be empty when defaultingType is System"))
		}
	case ListDefaulting:
	default:
		errs = append(errs, fmt.Errorf("defaultingType: %q is not System or List", a.DefaultingType))
	}
	seen := map[[2]string]bool{}
	for i, c := range a.DefaultConstraints {
		if c.MaxSkew <= 0 {
			errs = append(errs, fmt.Errorf("defaultConstraints[%d].maxSkew: must be greater than zero", i))
		}
		if c.TopologyKey == "" {
			errs = append(errs, fmt.Errorf("defaultConstraints[%d].topologyKey: required", i))
		}
		if c.WhenUnsatisfiable != v1.DoNotSchedule && c.WhenUnsatisfiable != v1.ScheduleAnyway {
			errs = append(errs, fmt.Errorf("defaultConstraints[%d].whenUnsatisfiable: %q is not DoNotSchedule or ScheduleAnyway", i, c.WhenUnsatisfiable))
		}
		if c.LabelSelector != nil {
			errs = append(errs, fmt.Errorf("defaultConstraints[%d].labelSelector: must not be set; it is derived from the pod's workloads", i))
		}
		k := [2]string{c.TopologyKey, string(c.WhenUnsatisfiable)}
		if seen[k] {
			errs = append(errs, fmt.Errorf("defaultConstraints[%d]: duplicate {%s, %s}", i, k[0], k[1]))
		}
		seen[k] = true
	}
	return errors.Join(errs...)
}

// PodTopologySpread is the plugin.
type PodTopologySpread struct {
	defaults        []v1.TopologySpreadConstraint
	systemDefaulted bool
}

var (
	_ framework.PreFilterPlugin     = (*PodTopologySpread)(nil)
	_ framework.PreFilterExtensions = (*PodTopologySpread)(nil)
	_ framework.FilterPlugin        = (*PodTopologySpread)(nil)
	_ framework.PreScorePlugin      = (*PodTopologySpread)(nil)
	_ framework.ScorePlugin         = (*PodTopologySpread)(nil)
	_ framework.ScoreNormalizer     = (*PodTopologySpread)(nil)
)

// New returns the plugin.
func New(args Args) (*PodTopologySpread, error) {
	if err := args.Validate(); err != nil {
		return nil, fmt.Errorf("%s args: %w", Name, err)
	}
	if args.DefaultingType == ListDefaulting {
		return &PodTopologySpread{defaults: args.DefaultConstraints}, nil
	}
	return &PodTopologySpread{defaults: SystemDefaultConstraints, systemDefaulted: true}, nil
}

// Name returns Name.
func (*PodTopologySpread) Name() string { return Name }

// constraint is a parsed v1.TopologySpreadConstraint.
type constraint struct {
	maxSkew            int32
	minDomains         int32
	topologyKey        string
	selector           labels.Selector
	nodeAffinityPolicy v1.NodeInclusionPolicy
	nodeTaintsPolicy   v1.NodeInclusionPolicy
}

// constraints returns the pod's constraints for action (its own, or the
// defaults with the workload selector).
func (pl *PodTopologySpread) constraints(pod *v1.Pod, snap *framework.Snapshot, action v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		return parse(pod.Spec.TopologySpreadConstraints, pod.Labels, action, nil)
	}
	if len(pl.defaults) == 0 {
		return nil, nil
	}
	sel := snap.DefaultSpreadSelector(pod)
	if sel.Empty() {
		return nil, nil
	}
	return parse(pl.defaults, pod.Labels, action, sel)
}

func parse(in []v1.TopologySpreadConstraint, podLabels map[string]string, action v1.UnsatisfiableConstraintAction, sel labels.Selector) ([]constraint, error) {
	var out []constraint
	for _, c := range in {
		if c.WhenUnsatisfiable != action {
			continue
		}
		s := sel
		if s == nil {
			var err error
			if s, err = metav1.LabelSelectorAsSelector(c.LabelSelector); err != nil {
				return nil, fmt.Errorf("topology spread constraint on %q: %w", c.TopologyKey, err)
			}
			for _, k := range c.MatchLabelKeys {
				v, ok := podLabels[k]
				if !ok {
					continue
				}
				r, err := labels.NewRequirement(k, selection.Equals, []string{v})
				if err != nil {
					return nil, fmt.Errorf("topology spread constraint on %q: matchLabelKeys: %w", c.TopologyKey, err)
				}
				s = s.Add(*r)
			}
		}
		pc := constraint{maxSkew: c.MaxSkew, minDomains: 1, topologyKey: c.TopologyKey, selector: s,
			nodeAffinityPolicy: v1.NodeInclusionPolicyHonor, nodeTaintsPolicy: v1.NodeInclusionPolicyIgnore}
		if c.MinDomains != nil {
			pc.minDomains = *c.MinDomains
		}
		if c.NodeAffinityPolicy != nil {
			pc.nodeAffinityPolicy = *c.NodeAffinityPolicy
		}
		if c.NodeTaintsPolicy != nil {
			pc.nodeTaintsPolicy = *c.NodeTaintsPolicy
		}
		out = append(out, pc)
	}
	return out, nil
}

// includes reports whether a node counts for the constraint under its
// node inclusion policies: nodeAffinityPolicy Honor (the default) counts
// only nodes matching the pod's node selector and required affinity;
// nodeTaintsPolicy Honor counts only nodes whose taints the pod tolerates.
func (c *constraint) includes(pod *v1.Pod, node *v1.Node, required *framework.RequiredNodeAffinity) bool {
	if c.nodeAffinityPolicy == v1.NodeInclusionPolicyHonor && !required.Match(node) {
		return false
	}
	if c.nodeTaintsPolicy == v1.NodeInclusionPolicyHonor {
		if _, bad := framework.FindUntoleratedTaint(node.Spec.Taints, pod.Spec.Tolerations, framework.DoNotScheduleTaint); bad {
			return false
		}
	}
	return true
}

func hasAllKeys(node *v1.Node, cs []constraint) bool {
	for i := range cs {
		if _, ok := node.Labels[cs[i].topologyKey]; !ok {
			return false
		}
	}
	return true
}

// countMatching counts the pods in ns matching sel, skipping terminating
// pods.
func countMatching(pods []*framework.PodInfo, sel labels.Selector, ns string) int {
	if sel.Empty() {
		return 0
	}
	n := 0
	for _, p := range pods {
		if p.Pod.DeletionTimestamp != nil || p.Pod.Namespace != ns {
			continue
		}
		if sel.Matches(labels.Set(p.Pod.Labels)) {
			n++
		}
	}
	return n
}

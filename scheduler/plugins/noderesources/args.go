package noderesources

import (
	"errors"
	"fmt"
	"strings"
)

// ScoringStrategyType selects how NodeResourcesFit scores a node.
type ScoringStrategyType string

const (
	// LeastAllocated favours nodes with the most free resources (spreads).
	LeastAllocated ScoringStrategyType = "LeastAllocated"
	// MostAllocated favours nodes with the least free resources (packs).
	MostAllocated ScoringStrategyType = "MostAllocated"
	// RequestedToCapacityRatio scores utilization through a
	// piecewise-linear shape.
	RequestedToCapacityRatio ScoringStrategyType = "RequestedToCapacityRatio"
)

// ResourceSpec is a resource scored and its weight (1-100).
type ResourceSpec struct {
	Name   string `json:"name"`
	Weight int64  `json:"weight,omitempty"`
}

// UtilizationShapePoint is one point of the RequestedToCapacityRatio
// shape: utilization 0-100 maps to score 0-10.
type UtilizationShapePoint struct {
	Utilization int32 `json:"utilization"`
	Score       int32 `json:"score"`
}

// RequestedToCapacityRatioParam holds the shape.
type RequestedToCapacityRatioParam struct {
	Shape []UtilizationShapePoint `json:"shape,omitempty"`
}

// ScoringStrategy configures scoring.
type ScoringStrategy struct {
	Type                     ScoringStrategyType            `json:"type,omitempty"`
	Resources                []ResourceSpec                 `json:"resources,omitempty"`
	RequestedToCapacityRatio *RequestedToCapacityRatioParam `json:"requestedToCapacityRatio,omitempty"`
}

// FitArgs are NodeResourcesFit's arguments (NodeResourcesFitArgs).
type FitArgs struct {
	// IgnoredResources are extended resources the filter does not check.
	IgnoredResources []string `json:"ignoredResources,omitempty"`
	// IgnoredResourceGroups are extended-resource domains (the part before
	// "/") the filter does not check.
	IgnoredResourceGroups []string         `json:"ignoredResourceGroups,omitempty"`
	ScoringStrategy       *ScoringStrategy `json:"scoringStrategy,omitempty"`
}

// DefaultResources are cpu and memory with weight 1 each.
func DefaultResources() []ResourceSpec {
	return []ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}}
}

// Default fills in upstream's defaults: LeastAllocated over cpu and
// memory, and weight 1 where a weight is 0.
func (a *FitArgs) Default() {
	if a.ScoringStrategy == nil {
		a.ScoringStrategy = &ScoringStrategy{}
	}
	s := a.ScoringStrategy
	if s.Type == "" {
		s.Type = LeastAllocated
	}
	if len(s.Resources) == 0 {
		s.Resources = DefaultResources()
	}
	DefaultWeights(s.Resources)
}

// DefaultWeights sets a zero weight to 1.
func DefaultWeights(rs []ResourceSpec) {
	for i := range rs {
		if rs[i].Weight == 0 {
			rs[i].Weight = 1
		}
	}
}

// Validate checks defaulted arguments.
func (a *FitArgs) Validate() error {
	var errs []error
	for _, g := range a.IgnoredResourceGroups {
		if g == "" || strings.Contains(g, "/") {
			errs = append(errs, fmt.Errorf("ignoredResourceGroups: %q is not a resource group (the part of a resource name before \"/\")", g))
		}
	}
	s := a.ScoringStrategy
	if s == nil {
		return errors.Join(errs...)
	}
	switch s.Type {
	case LeastAllocated, MostAllocated:
		if s.RequestedToCapacityRatio != nil {
			errs = append(errs, fmt.Errorf("scoringStrategy.requestedToCapacityRatio: only allowed with type %s", RequestedToCapacityRatio))
		}
	case RequestedToCapacityRatio:
		errs = append(errs, validateShape(s.RequestedToCapacityRatio)...)
	default:
		errs = append(errs, fmt.Errorf("scoringStrategy.type: %q is not one of %s, %s, %s", s.Type, LeastAllocated, MostAllocated, RequestedToCapacityRatio))
	}
	if err := ValidateResources("scoringStrategy.resources", s.Resources); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ValidateResources checks names are set and unique and weights in [1, 100].
func ValidateResources(path string, rs []ResourceSpec) error {
	var errs []error
	seen := map[string]bool{}
	for i, r := range rs {
		if r.Name == "" {
			errs = append(errs, fmt.Errorf("%s[%d].name: required", path, i))
		}
		if seen[r.Name] {
			errs = append(errs, fmt.Errorf("%s[%d].name: duplicate %q", path, i, r.Name))
		}
		seen[r.Name] = true
		if r.Weight < 1 || r.Weight > 100 {
			errs = append(errs, fmt.Errorf("%s[%d].weight: %d is not in [1, 100]", path, i, r.Weight))
		}
	}
	return errors.Join(errs...)
}

func validateShape(p *RequestedToCapacityRatioParam) []error {
	const path = "scoringStrategy.requestedToCapacityRatio.shape"
	if p == nil || len(p.Shape) == 0 {
		return []error{fmt.Errorf("%s: required for type %s", path, RequestedToCapacityRatio)}
	}
	var errs []error
	for i, pt := range p.Shape {
		if pt.Utilization < 0 || pt.Utilization > 100 {
			errs = append(errs, fmt.Errorf("%s[%d].utilization: %d is not in [0, 100]", path, i, pt.Utilization))
		}
		if i > 0 && pt.Utilization <= p.Shape[i-1].Utilization {
			errs = append(errs, fmt.Errorf("%s[%d].utilization: values must be strictly increasing", path, i))
		}
		if pt.Score < 0 || pt.Score > 10 {
			errs = append(errs, fmt.Errorf("%s[%d].score: %d is not in [0, 10]", path, i, pt.Score))
		}
	}
	return errs
}

package framework

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"
)

// ErrNotFound is returned by CycleState.Read for a key nobody wrote.
var ErrNotFound = errors.New("framework: not found in cycle state")

// StateKey names a plugin's entry in the CycleState.
type StateKey string

// StateData is what plugins keep in the CycleState. Clone must return a
// copy that preemption can mutate (through PreFilterExtensions) without
// affecting the original; immutable data may return itself.
type StateData interface {
	Clone() StateData
}

// CycleState carries what plugins compute during one scheduling cycle
// (PreFilter for Filter, PreScore for Score). Writes happen only in the
// sequential phases (PreFilter, PreScore, PreFilterExtensions); Filter and
// Score, which may run concurrently, only read.
type CycleState struct {
	storage map[StateKey]StateData
	// SkipFilterPlugins lists plugins whose PreFilter returned Skip.
	SkipFilterPlugins sets.Set[string]
	// SkipScorePlugins lists plugins whose PreScore returned Skip.
	SkipScorePlugins sets.Set[string]
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{storage: make(map[StateKey]StateData)}
}

// Read returns the data stored under key, or ErrNotFound.
func (c *CycleState) Read(key StateKey) (StateData, error) {
	if v, ok := c.storage[key]; ok {
		return v, nil
	}
	return nil, fmt.Errorf("reading %q: %w", key, ErrNotFound)
}

// Write stores data under key.
func (c *CycleState) Write(key StateKey, data StateData) {
	c.storage[key] = data
}

// Delete removes key.
func (c *CycleState) Delete(key StateKey) {
	delete(c.storage, key)
}

// Clone copies the state, cloning every entry.
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	out := &CycleState{
		storage:           make(map[StateKey]StateData, len(c.storage)),
		SkipFilterPlugins: c.SkipFilterPlugins.Clone(),
		SkipScorePlugins:  c.SkipScorePlugins.Clone(),
	}
	for k, v := range c.storage {
		out.storage[k] = v.Clone()
	}
	return out
}

// ReadAs reads key and asserts its type; a missing key or a wrong type is
// an error naming the key.
func ReadAs[T StateData](c *CycleState, key StateKey) (T, error) {
	var zero T
	v, err := c.Read(key)
	if err != nil {
		return zero, err
	}
	t, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("cycle state %q holds %T, not %T", key, v, zero)
	}
	return t, nil
}

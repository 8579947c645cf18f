package framework

import (
	"context"
	"errors"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

type recordingReserve struct {
	name string
	fail bool
	log  *[]string
}

func (r recordingReserve) Name() string { return r.name }

func (r recordingReserve) Reserve(context.Context, *CycleState, *v1.Pod, string, *Snapshot) *Status {
	*r.log = append(*r.log, "reserve "+r.name)
	if r.fail {
		return AsStatus(errors.New("no room"))
	}
	return nil
}

func (r recordingReserve) Unreserve(context.Context, *CycleState, *v1.Pod, string, *Snapshot) {
	*r.log = append(*r.log, "unreserve "+r.name)
}

// TestRunReserve: a failing Reserve unreserves it and those before it, in
// reverse order; RunUnreserve undoes all in reverse order.
func TestRunReserve(t *testing.T) {
	t.Parallel()
	var log []string
	p := &Profile{Reserve: []ReservePlugin{
		recordingReserve{"a", false, &log}, recordingReserve{"b", true, &log}, recordingReserve{"c", false, &log},
	}}
	s := p.RunReserve(context.Background(), NewCycleState(), &v1.Pod{}, "n", nil)
	if s.Code() != Error || s.Plugin() != "b" {
		t.Errorf("status %v", s)
	}
	if want := []string{"reserve a", "reserve b", "unreserve b", "unreserve a"}; !slices.Equal(log, want) {
		t.Errorf("calls %v, want %v", log, want)
	}
	log = nil
	p.RunUnreserve(context.Background(), NewCycleState(), &v1.Pod{}, "n", nil)
	if want := []string{"unreserve c", "unreserve b", "unreserve a"}; !slices.Equal(log, want) {
		t.Errorf("calls %v, want %v", log, want)
	}
}

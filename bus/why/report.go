package why

import (
	"encoding/json"
	"time"

	"github.com/kubebus/kubebus/bus"
)

// Report is the answer: the chain of steps and where it stops.
type Report struct {
	Target Target `json:"target"`
	// Kind is the target's kind ("Deployment").
	Kind string `json:"kind"`
	// Revision is the revision the answer describes the cluster at.
	Revision int64 `json:"revision"`
	// Found is false when the bus holds no revision of the target.
	Found bool `json:"found"`
	// Summary is one line of the target's state.
	Summary string `json:"summary"`
	// Chain lists the steps from the target's creation towards serving
	// traffic, in order.
	Chain []Link `json:"chain"`
	// Slowest is the index in Chain of the step that took longest, -1
	// when there are fewer than two steps.
	Slowest int `json:"slowest"`
	// Stops says where the chain stops and why; empty when nothing is
	// wrong.
	Stops []Finding `json:"stops,omitempty"`
	// Notes are caveats: what could not be read, gaps in the bus.
	Notes []string `json:"notes,omitempty"`
}

// Link is one step of the chain.
type Link struct {
	// Step says what happened, in words ("pod web-1 bound to node-1").
	Step string `json:"step"`
	// Stage is the lifecycle step ("created", "scheduled", ...) or
	// "owner" for an owner's creation.
	Stage string `json:"stage"`
	// Object is the object the step happened to (kind/name).
	Object   string    `json:"object"`
	Revision int64     `json:"revision"`
	Time     time.Time `json:"time"`
	// Who wrote the revision.
	Who string `json:"who"`
	// Took is the time since the step before (0 for the first).
	Took time.Duration `json:"tookNanos"`
}

// Finding is one reason the chain stops.
type Finding struct {
	// Cause is a stable code: Unschedulable, ImagePull, CrashLoopBackOff,
	// ReadinessFailing, ContainerWaiting, PodFailed, QuotaExceeded,
	// CreateRefused, StuckTerminating, RolloutStalled, RolloutProgressing,
	// PVCPending, NoSelector, SelectorMatchesNothing, NoReadyEndpoints,
	// Deleted, NotFound.
	Cause string `json:"cause"`
	// Object is what the finding is about (kind/name).
	Object string `json:"object"`
	// Message says it in plain words.
	Message string `json:"message"`
	// Evidence are the facts behind it.
	Evidence []string `json:"evidence,omitempty"`
}

// decode unmarshals a revision's object.
func decode[T any](raw json.RawMessage) (*T, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	v := new(T)
	if json.Unmarshal(raw, v) != nil {
		return nil, false
	}
	return v, true
}

// latest decodes an object's newest state, unless it is deleted.
func latest[T any](h *History) (*T, *Rev, bool) {
	l := h.Latest()
	if l == nil || l.Type == bus.Deleted {
		return nil, nil, false
	}
	v, ok := decode[T](l.Object)
	return v, l, ok
}

// targetKey is the bus key of t.
func targetKey(t Target) bus.ObjectKey {
	return bus.ObjectKey{Group: t.Group, Resource: t.Resource, Namespace: t.Namespace, Name: t.Name}
}

// finishChain fills Took and the slowest step.
func (r *Report) finishChain() {
	r.Slowest = -1
	var most time.Duration = -1
	for i := range r.Chain {
		if i == 0 {
			r.Chain[i].Took = 0
			continue
		}
		r.Chain[i].Took = r.Chain[i].Time.Sub(r.Chain[i-1].Time)
		if r.Chain[i].Took > most {
			most, r.Slowest = r.Chain[i].Took, i
		}
	}
}

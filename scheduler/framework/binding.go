package framework

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// ReservePlugin keeps what a pod will use on its chosen node before the pod
// is bound. The caller runs Reserve right after assuming the pod, holding
// the snapshot as for a cycle, so a plugin may assume objects in snap (a
// claim's selected node, say) that the next cycles then see. Unreserve
// undoes it when a later step fails; it must be idempotent.
type ReservePlugin interface {
	Plugin
	Reserve(ctx context.Context, state *CycleState, pod *v1.Pod, node string, snap *Snapshot) *Status
	Unreserve(ctx context.Context, state *CycleState, pod *v1.Pod, node string, snap *Snapshot)
}

// PreBindPlugin runs in the binding goroutine, before the Binding is
// written, and may do I/O through h (and block, within ctx): an error
// status fails the binding, which unreserves the pod and retries it.
// PreBind plugins are the only part of the framework that does I/O.
type PreBindPlugin interface {
	Plugin
	PreBind(ctx context.Context, state *CycleState, pod *v1.Pod, node string, h BindHandle) *Status
}

// PreBindPreFlight is implemented by PreBind plugins that can tell, after
// Reserve, whether PreBind has anything to do for the pod: Skip means it
// would return at once.
type PreBindPreFlight interface {
	PreBindPreFlight(ctx context.Context, state *CycleState, pod *v1.Pod, node string) *Status
}

// WillPreBind reports whether any PreBind plugin has work for the pod (a
// plugin without PreBindPreFlight is taken to have some).
func (p *Profile) WillPreBind(ctx context.Context, state *CycleState, pod *v1.Pod, node string) bool {
	for _, pl := range p.PreBind {
		pf, ok := pl.(PreBindPreFlight)
		if !ok || !pf.PreBindPreFlight(ctx, state, pod, node).IsSkip() {
			return true
		}
	}
	return false
}

// BindHandle is what PreBind plugins may use: the API and the scheduler's
// bus-fed caches (read through the API server's writes as they arrive).
type BindHandle interface {
	Client() kubernetes.Interface
	// Claim reads a PersistentVolumeClaim from the cache.
	Claim(namespace, name string) (*v1.PersistentVolumeClaim, bool)
	// Pod reads a pod from the cache.
	Pod(namespace, name string) (*v1.Pod, bool)
}

// RunReserve runs the Reserve plugins in order. On the first failure it
// unreserves those that ran (the failed one too) and returns its status.
func (p *Profile) RunReserve(ctx context.Context, state *CycleState, pod *v1.Pod, node string, snap *Snapshot) *Status {
	for i, pl := range p.Reserve {
		if s := pl.Reserve(ctx, state, pod, node, snap); !s.IsSuccess() {
			for j := i; j >= 0; j-- {
				p.Reserve[j].Unreserve(ctx, state, pod, node, snap)
			}
			return AsStatus(fmt.Errorf("running Reserve plugin %q: %w", pl.Name(), s.Err())).WithPlugin(pl.Name())
		}
	}
	return nil
}

// RunUnreserve runs every Reserve plugin's Unreserve, in reverse order.
func (p *Profile) RunUnreserve(ctx context.Context, state *CycleState, pod *v1.Pod, node string, snap *Snapshot) {
	for i := len(p.Reserve) - 1; i >= 0; i-- {
		p.Reserve[i].Unreserve(ctx, state, pod, node, snap)
	}
}

// RunPreBind runs the PreBind plugins in order and stops at the first
// failure.
func (p *Profile) RunPreBind(ctx context.Context, state *CycleState, pod *v1.Pod, node string, h BindHandle) *Status {
	for _, pl := range p.PreBind {
		if s := pl.PreBind(ctx, state, pod, node, h); !s.IsSuccess() {
			return AsStatus(fmt.Errorf("running PreBind plugin %q: %w", pl.Name(), s.Err())).WithPlugin(pl.Name())
		}
	}
	return nil
}

package prober

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// worker probes one container with one probe periodically.
type worker struct {
	m         *Manager
	podUID    types.UID
	spec      *corev1.Container
	container Container
	kind      Kind
	probe     corev1.Probe

	started  bool // guarded by m.mu
	stop     chan struct{}
	stopOnce sync.Once

	// Owned by the worker goroutine.
	last   Result
	streak int
	onHold bool
}

func newWorker(m *Manager, uid types.UID, spec *corev1.Container, c Container, k Kind, probe *corev1.Probe) *worker {
	return &worker{m: m, podUID: uid, spec: spec.DeepCopy(), container: c, kind: k, probe: *probe.DeepCopy(), stop: make(chan struct{})}
}

func (w *worker) halt() { w.stopOnce.Do(func() { close(w.stop) }) }

// period is periodSeconds (default 10s).
func (w *worker) period() time.Duration {
	if w.probe.PeriodSeconds <= 0 {
		return 10 * time.Second
	}
	return time.Duration(w.probe.PeriodSeconds) * time.Second
}

func threshold(v, def int32) int {
	if v <= 0 {
		return int(def)
	}
	return int(v)
}

// run probes at once, then every period, until stopped or doProbe says
// the probe is over.
func (w *worker) run(ctx context.Context) {
	defer w.m.wg.Done()
	ticker := w.m.cfg.Clock.NewTicker(w.period())
	defer ticker.Stop()
	for w.doProbe(ctx) {
		select {
		case <-ctx.Done():
			return
		case <-w.stop:
			return
		case <-ticker.C():
		}
	}
}

// doProbe probes once if it is time, records the verdict once a
// threshold is reached, and reports whether to keep probing.
func (w *worker) doProbe(ctx context.Context) bool {
	select {
	case <-w.stop:
		return false
	case <-ctx.Done():
		return false
	default:
	}
	t, ok := w.m.target(w)
	if !ok {
		return false
	}
	if t.Pod.DeletionTimestamp != nil && (w.kind == Liveness || w.kind == Startup) {
		// A terminating pod's containers are not restarted any more.
		w.m.set(w, Success, "")
		return false
	}
	if w.onHold {
		return true // a failed liveness or startup probe: the container is being replaced
	}
	if w.m.cfg.Clock.Since(w.container.StartedAt) < time.Duration(w.probe.InitialDelaySeconds)*time.Second {
		return true
	}
	if w.kind == Startup {
		if r, _ := w.m.Get(w.container.ID, Startup); r == Success {
			return false // started: the startup probe is done for this container
		}
	} else if w.spec.StartupProbe != nil {
		if r, _ := w.m.Get(w.container.ID, Startup); r != Success {
			return true // nothing but the startup probe runs before it succeeds
		}
	}

	result, msg, err := w.m.cfg.Prober.Probe(ctx, &w.probe, t)
	if err != nil {
		w.m.cfg.Logger.Debug("probe error", "pod", w.podUID, "container", w.container.Name, "probe", w.kind.String(), "err", err)
		return true
	}
	if result == Failure && w.m.cfg.OnFailure != nil {
		w.m.cfg.OnFailure(Update{PodUID: w.podUID, ContainerName: w.container.Name, ContainerID: w.container.ID,
			Kind: w.kind, Result: result, Message: msg})
	}
	if result == w.last {
		w.streak++
	} else {
		w.last, w.streak = result, 1
	}
	if (result == Failure && w.streak < threshold(w.probe.FailureThreshold, 3)) ||
		(result == Success && w.streak < threshold(w.probe.SuccessThreshold, 1)) {
		return true
	}
	w.m.set(w, result, msg)
	if result == Failure && (w.kind == Liveness || w.kind == Startup) {
		w.onHold, w.streak = true, 0
	}
	return true
}

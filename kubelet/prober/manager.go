package prober

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Kind is the kind of a probe.
type Kind int8

// Probe kinds.
const (
	Liveness Kind = iota
	Readiness
	Startup
)

func (k Kind) String() string {
	switch k {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	case Startup:
		return "Startup"
	}
	return "Kind(?)"
}

// initial is the result a probe has before its first verdict, as
// upstream: a container is not ready until its readiness probe succeeds,
// is alive until its liveness probe fails, and has not started until its
// startup probe succeeds.
func (k Kind) initial() Result {
	switch k {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	}
	return Unknown
}

// probeOf returns the container's probe of kind k, or nil.
func probeOf(c *corev1.Container, k Kind) *corev1.Probe {
	switch k {
	case Liveness:
		return c.LivenessProbe
	case Readiness:
		return c.ReadinessProbe
	}
	return c.StartupProbe
}

// Update reports that a probe's result changed.
type Update struct {
	PodUID        types.UID
	ContainerName string
	ContainerID   string
	Kind          Kind
	Result        Result
	// Message is the probe's output or why it failed (for events).
	Message string
}

// ContainerResults are the current results of one container's probes.
// A probe the container does not have is Unknown.
type ContainerResults struct {
	Liveness, Readiness, Startup Result
}

// Container is a running container whose probes the Manager runs.
type Container struct {
	Name, ID string
	// StartedAt is when the container started; initialDelaySeconds
	// counts from it.
	StartedAt time.Time
}

// Config configures a Manager.
type Config struct {
	// Prober runs the probes. Required.
	Prober *Prober
	// Clock drives probe periods and initial delays; clock.RealClock by
	// default.
	Clock clock.WithTicker
	// OnUpdate, when set, is called (from a worker goroutine, without
	// locks held) each time a result changes; the kubelet re-syncs the
	// pod. It must not block for long.
	OnUpdate func(Update)
	// OnFailure, when set, is called (from a worker goroutine) after every
	// probe attempt that fails, before the failure threshold decides
	// anything: upstream's kubelet records an Unhealthy event for each.
	// It must not block for long.
	OnFailure func(Update)
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (c *Config) validate() error {
	if c.Prober == nil {
		return errors.New("prober: Config.Prober is required")
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

type resultKey struct {
	containerID string
	kind        Kind
}

type podState struct {
	pod   *corev1.Pod
	podIP string
}

// Manager runs a worker per running container and probe kind, keyed by
// container ID: UpdatePod starts workers for new containers and stops
// those of containers gone; results stay readable (Get, Results) until
// their container goes. Workers run while Run runs; UpdatePod may be
// called before Run starts.
type Manager struct {
	cfg Config

	mu      sync.Mutex
	ctx     context.Context // set by Run
	results map[resultKey]Result
	workers map[resultKey]*worker
	pods    map[types.UID]*podState
	wg      sync.WaitGroup
}

// NewManager returns a Manager.
func NewManager(cfg Config) (*Manager, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Manager{cfg: cfg, results: map[resultKey]Result{}, workers: map[resultKey]*worker{}, pods: map[types.UID]*podState{}}, nil
}

// Run runs the workers until ctx ends, then stops them and waits for them.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.ctx != nil {
		m.mu.Unlock()
		return errors.New("prober: Run called twice")
	}
	m.ctx = ctx
	for _, w := range m.workers {
		m.startLocked(w)
	}
	m.mu.Unlock()

	<-ctx.Done()
	m.mu.Lock()
	for _, w := range m.workers {
		w.halt()
	}
	m.mu.Unlock()
	m.wg.Wait()
	return nil
}

func (m *Manager) startLocked(w *worker) {
	if m.ctx == nil || w.started {
		return
	}
	w.started = true
	m.wg.Add(1)
	go w.run(m.ctx)
}

// UpdatePod tells the Manager the pod's current spec, IP and running
// containers. Probing starts for each running container with probes and
// stops for the pod's containers not listed. A deleted pod's liveness and
// startup probes report Success and stop, as upstream.
func (m *Manager) UpdatePod(pod *corev1.Pod, podIP string, running []Container) {
	if pod == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pods[pod.UID] = &podState{pod: pod, podIP: podIP}
	keep := map[string]bool{}
	for _, rc := range running {
		spec := findContainer(pod, rc.Name)
		if spec == nil || rc.ID == "" {
			continue
		}
		keep[rc.ID] = true
		for _, k := range []Kind{Liveness, Readiness, Startup} {
			probe := probeOf(spec, k)
			key := resultKey{rc.ID, k}
			if probe == nil || m.workers[key] != nil {
				continue
			}
			w := newWorker(m, pod.UID, spec, rc, k, probe)
			m.workers[key] = w
			m.results[key] = k.initial()
			m.startLocked(w)
		}
	}
	for key, w := range m.workers {
		if w.podUID == pod.UID && !keep[key.containerID] {
			m.removeLocked(key)
		}
	}
}

// RemovePod stops the workers of the pod and forgets their results.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, w := range m.workers {
		if w.podUID == uid {
			m.removeLocked(key)
		}
	}
	delete(m.pods, uid)
}

func (m *Manager) removeLocked(key resultKey) {
	if w := m.workers[key]; w != nil {
		w.halt()
	}
	delete(m.workers, key)
	delete(m.results, key)
}

// Get returns the result of the container's probe of kind k, and whether
// the container has such a probe being run.
func (m *Manager) Get(containerID string, k Kind) (Result, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.results[resultKey{containerID, k}]
	return r, ok
}

// Results returns the results of the container's probes.
func (m *Manager) Results(containerID string) ContainerResults {
	m.mu.Lock()
	defer m.mu.Unlock()
	return ContainerResults{
		Liveness:  m.results[resultKey{containerID, Liveness}],
		Readiness: m.results[resultKey{containerID, Readiness}],
		Startup:   m.results[resultKey{containerID, Startup}],
	}
}

// set records w's result, if w is still current, and publishes a change.
func (m *Manager) set(w *worker, r Result, msg string) {
	key := resultKey{w.container.ID, w.kind}
	m.mu.Lock()
	if m.workers[key] != w {
		m.mu.Unlock()
		return
	}
	old := m.results[key]
	m.results[key] = r
	m.mu.Unlock()
	if old == r {
		return
	}
	m.cfg.Logger.Debug("probe result changed", "pod", w.podUID, "container", w.container.Name,
		"containerID", w.container.ID, "probe", w.kind.String(), "result", r.String(), "message", msg)
	if m.cfg.OnUpdate != nil {
		m.cfg.OnUpdate(Update{PodUID: w.podUID, ContainerName: w.container.Name, ContainerID: w.container.ID,
			Kind: w.kind, Result: r, Message: msg})
	}
}

// target returns what w probes: the pod's latest spec and IP.
func (m *Manager) target(w *worker) (Target, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.pods[w.podUID]
	if ps == nil {
		return Target{}, false
	}
	return Target{Pod: ps.pod, Container: w.spec, ContainerID: w.container.ID, PodIP: ps.podIP}, true
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		// Only restartable init containers (sidecars) are probed.
		if c.Name == name && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			return c
		}
	}
	return nil
}

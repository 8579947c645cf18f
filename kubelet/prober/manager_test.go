package prober

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubebus/kubebus/kubelet/runtime"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// call is one ExecSync the test answers.
type call struct {
	containerID string
	cmd         []string
	at          time.Time // the fake clock when the probe ran
	startup     Result    // the container's startup result when the probe ran
	reply       chan runtime.ExecResult
}

// lockstepExecer hands each ExecSync to the test, on a channel per
// command name, and blocks until the test answers: probes run one at a
// time, in the order the test allows.
type lockstepExecer struct {
	clock *clocktesting.FakeClock
	mu    sync.Mutex
	m     *Manager
	chans map[string]chan call
}

func newLockstep(clock *clocktesting.FakeClock, cmds ...string) *lockstepExecer {
	l := &lockstepExecer{clock: clock, chans: map[string]chan call{}}
	for _, c := range cmds {
		l.chans[c] = make(chan call)
	}
	return l
}

func (l *lockstepExecer) ExecSync(ctx context.Context, id string, cmd []string, _ time.Duration) (runtime.ExecResult, error) {
	l.mu.Lock()
	m := l.m
	l.mu.Unlock()
	c := call{containerID: id, cmd: cmd, at: l.clock.Now(), reply: make(chan runtime.ExecResult, 1)}
	if m != nil {
		c.startup, _ = m.Get(id, Startup)
	}
	ch, ok := l.chans[cmd[0]]
	if !ok {
		return runtime.ExecResult{}, fmt.Errorf("unexpected command %v", cmd)
	}
	select {
	case ch <- c:
	case <-ctx.Done():
		return runtime.ExecResult{}, ctx.Err()
	}
	select {
	case r := <-c.reply:
		return r, nil
	case <-ctx.Done():
		return runtime.ExecResult{}, ctx.Err()
	}
}

// expect waits for the next probe running cmd.
func (l *lockstepExecer) expect(t *testing.T, cmd string) call {
	t.Helper()
	select {
	case c := <-l.chans[cmd]:
		return c
	case <-time.After(30 * time.Second): // a safety net against hangs, not a timing assertion
		t.Fatalf("no %q probe ran", cmd)
	}
	return call{}
}

func (c call) answer(exit int32) { c.reply <- runtime.ExecResult{ExitCode: exit} }

type harness struct {
	clock    *clocktesting.FakeClock
	exec     *lockstepExecer
	m        *Manager
	updates  chan Update
	failures chan Update
}

// newHarness makes a Manager over a lockstep execer for cmds; run starts
// it (tests may call UpdatePod before).
func newHarness(t *testing.T, cmds ...string) *harness {
	t.Helper()
	clock := clocktesting.NewFakeClock(t0)
	h := &harness{clock: clock, exec: newLockstep(clock, cmds...), updates: make(chan Update, 100), failures: make(chan Update, 100)}
	m, err := NewManager(Config{Prober: NewProber(h.exec), Clock: clock, OnUpdate: func(u Update) { h.updates <- u },
		OnFailure: func(u Update) { h.failures <- u }})
	if err != nil {
		t.Fatal(err)
	}
	h.m = m
	h.exec.mu.Lock()
	h.exec.m = m
	h.exec.mu.Unlock()
	return h
}

func (h *harness) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func (h *harness) update(t *testing.T) Update {
	t.Helper()
	select {
	case u := <-h.updates:
		return u
	case <-time.After(30 * time.Second): // a safety net against hangs
		t.Fatal("no update")
	}
	return Update{}
}

func execProbe(cmd string, period, failure, success, delay int32) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{cmd}}},
		PeriodSeconds: period, FailureThreshold: failure, SuccessThreshold: success, InitialDelaySeconds: delay, TimeoutSeconds: 300}
}

func probedPod(c corev1.Container) *corev1.Pod {
	c.Name, c.Image = "app", "busybox"
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
}

func TestLivenessFailureThreshold(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "live")
	pod := probedPod(corev1.Container{LivenessProbe: execProbe("live", 1, 3, 1, 0)})
	h.m.UpdatePod(pod, "10.0.0.1", []Container{{Name: "app", ID: "c1", StartedAt: t0}})
	if r, ok := h.m.Get("c1", Liveness); !ok || r != Success {
		t.Fatalf("initial liveness = %s %v, want Success", r, ok)
	}
	h.run(t)
	for i := 1; i <= 3; i++ {
		c := h.exec.expect(t, "live")
		if c.containerID != "c1" || !c.at.Equal(t0.Add(time.Duration(i-1)*time.Second)) {
			t.Fatalf("probe %d: container %s at %v", i, c.containerID, c.at)
		}
		// The failures before this one did not reach the threshold.
		if r, _ := h.m.Get("c1", Liveness); r != Success {
			t.Fatalf("liveness = %s after %d failures, want Success", r, i-1)
		}
		c.answer(1)
		if i < 3 {
			h.clock.Step(time.Second)
		}
	}
	u := h.update(t)
	if u.Kind != Liveness || u.Result != Failure || u.ContainerID != "c1" || u.ContainerName != "app" || u.PodUID != "uid-1" {
		t.Fatalf("update = %+v", u)
	}
	if got := h.m.Results("c1"); got.Liveness != Failure {
		t.Fatalf("results = %+v", got)
	}

	// The container is replaced: the old one's results go, the new one
	// starts from the initial value.
	h.m.UpdatePod(pod, "10.0.0.1", []Container{{Name: "app", ID: "c2", StartedAt: h.clock.Now()}})
	if _, ok := h.m.Get("c1", Liveness); ok {
		t.Fatal("results of a gone container kept")
	}
	if r, _ := h.m.Get("c2", Liveness); r != Success {
		t.Fatalf("new container liveness = %s, want Success", r)
	}
	if c := h.exec.expect(t, "live"); c.containerID != "c2" {
		t.Fatalf("probe of %s, want c2", c.containerID)
	} else {
		c.answer(0)
	}
}

func TestReadinessSuccessThreshold(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "ready")
	pod := probedPod(corev1.Container{ReadinessProbe: execProbe("ready", 2, 1, 2, 0)})
	h.run(t)
	h.m.UpdatePod(pod, "10.0.0.1", []Container{{Name: "app", ID: "c1", StartedAt: t0}})
	if r, _ := h.m.Get("c1", Readiness); r != Failure {
		t.Fatalf("initial readiness = %s, want Failure", r)
	}
	h.exec.expect(t, "ready").answer(0)
	h.clock.Step(2 * time.Second)
	c := h.exec.expect(t, "ready")
	if r, _ := h.m.Get("c1", Readiness); r != Failure {
		t.Fatalf("readiness = %s after one success of two, want Failure", r)
	}
	c.answer(0)
	if u := h.update(t); u.Kind != Readiness || u.Result != Success {
		t.Fatalf("update = %+v", u)
	}
	h.clock.Step(2 * time.Second)
	h.exec.expect(t, "ready").answer(1)
	if u := h.update(t); u.Kind != Readiness || u.Result != Failure {
		t.Fatalf("update = %+v", u)
	}
}

// TestReadinessFailuresReported: a readiness probe that keeps failing
// changes no result (a container starts unready), yet every failed attempt
// is reported to OnFailure, with the probe's output, for the Unhealthy
// event upstream records each time.
func TestReadinessFailuresReported(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "ready")
	pod := probedPod(corev1.Container{ReadinessProbe: execProbe("ready", 1, 3, 1, 0)})
	h.run(t)
	h.m.UpdatePod(pod, "10.0.0.1", []Container{{Name: "app", ID: "c1", StartedAt: t0}})
	for i := 0; i < 3; i++ {
		c := h.exec.expect(t, "ready")
		c.reply <- runtime.ExecResult{ExitCode: 1, Stdout: []byte("db not reachable")}
		var u Update
		select {
		case u = <-h.failures:
		case <-time.After(30 * time.Second): // a safety net against hangs
			t.Fatalf("failure %d not reported", i+1)
		}
		if u.Kind != Readiness || u.Result != Failure || u.ContainerName != "app" || u.Message != "db not reachable" {
			t.Fatalf("failure %d = %+v", i+1, u)
		}
		h.clock.Step(time.Second)
	}
	select {
	case u := <-h.updates:
		t.Fatalf("an unchanged result was published: %+v", u)
	default:
	}
	// A success is no failure.
	h.exec.expect(t, "ready").answer(0)
	if u := h.update(t); u.Result != Success {
		t.Fatalf("update = %+v", u)
	}
	select {
	case u := <-h.failures:
		t.Fatalf("a success was reported as a failure: %+v", u)
	default:
	}
}

func TestStartupGatesOtherProbes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "startup", "ready", "live")
	pod := probedPod(corev1.Container{
		StartupProbe:   execProbe("startup", 1, 10, 1, 0),
		ReadinessProbe: execProbe("ready", 1, 3, 1, 0),
		LivenessProbe:  execProbe("live", 1, 3, 1, 0),
	})
	h.m.UpdatePod(pod, "10.0.0.1", []Container{{Name: "app", ID: "c1", StartedAt: t0}})
	h.run(t)
	if got := h.m.Results("c1"); got.Startup != Unknown || got.Readiness != Failure || got.Liveness != Success {
		t.Fatalf("initial results = %+v", got)
	}
	h.exec.expect(t, "startup").answer(1) // below its threshold
	h.clock.Step(time.Second)
	h.exec.expect(t, "startup").answer(0)
	if u := h.update(t); u.Kind != Startup || u.Result != Success {
		t.Fatalf("update = %+v", u)
	}
	// The other probes run from the tick on which startup succeeded (if
	// they woke after it) or the next one.
	h.clock.Step(time.Second)
	for _, cmd := range []string{"ready", "live"} {
		c := h.exec.expect(t, cmd)
		if c.startup != Success {
			t.Fatalf("%s probe ran with startup %s", cmd, c.startup)
		}
		if c.at.Before(t0.Add(time.Second)) {
			t.Fatalf("%s probe at %v, before startup succeeded", cmd, c.at)
		}
		c.answer(0)
	}
	if u := h.update(t); u.Kind != Readiness || u.Result != Success {
		t.Fatalf("update = %+v", u)
	}
}

func TestStartupFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "startup")
	pod := probedPod(corev1.Container{StartupProbe: execProbe("startup", 1, 2, 1, 0)})
	h.m.UpdatePod(pod, "10.0.0.1", []Container{{Name: "app", ID: "c1", StartedAt: t0}})
	h.run(t)
	h.exec.expect(t, "startup").answer(1)
	h.clock.Step(time.Second)
	h.exec.expect(t, "startup").answer(1)
	if u := h.update(t); u.Kind != Startup || u.Result != Failure {
		t.Fatalf("update = %+v", u)
	}
}

func TestInitialDelay(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "ready")
	pod := probedPod(corev1.Container{ReadinessProbe: execProbe("ready", 1, 1, 1, 5)})
	// The container started 4s ago: the first probe is due in 1s, not now.
	started := t0.Add(-4 * time.Second)
	h.m.UpdatePod(pod, "10.0.0.1", []Container{{Name: "app", ID: "c1", StartedAt: started}})
	h.run(t)
	h.clock.Step(time.Second)
	c := h.exec.expect(t, "ready")
	if want := started.Add(5 * time.Second); !c.at.Equal(want) {
		t.Fatalf("first probe at %v, want %v (initial delay)", c.at, want)
	}
	c.answer(0)
}

func TestDeletedPodStopsLiveness(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "live")
	pod := probedPod(corev1.Container{LivenessProbe: execProbe("live", 1, 1, 1, 0)})
	h.m.UpdatePod(pod, "10.0.0.1", []Container{{Name: "app", ID: "c1", StartedAt: t0}})
	h.run(t)
	h.exec.expect(t, "live").answer(1)
	if u := h.update(t); u.Result != Failure {
		t.Fatalf("update = %+v", u)
	}
	deleted := pod.DeepCopy()
	now := metav1.NewTime(t0)
	deleted.DeletionTimestamp = &now
	h.m.UpdatePod(deleted, "10.0.0.1", []Container{{Name: "app", ID: "c1", StartedAt: t0}})
	h.clock.Step(time.Second)
	if u := h.update(t); u.Kind != Liveness || u.Result != Success {
		t.Fatalf("update = %+v, want liveness Success for a terminating pod", u)
	}
}

func TestRemovePodAndSidecars(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "ready")
	always := corev1.ContainerRestartPolicyAlways
	pod := probedPod(corev1.Container{})
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "proxy", RestartPolicy: &always, ReadinessProbe: execProbe("ready", 1, 1, 1, 0)},
		{Name: "setup", ReadinessProbe: execProbe("ready", 1, 1, 1, 0)}, // not a sidecar: never probed
	}
	h.m.UpdatePod(pod, "10.0.0.1", []Container{{Name: "proxy", ID: "s1", StartedAt: t0}, {Name: "setup", ID: "i1", StartedAt: t0}, {Name: "app", ID: "c1", StartedAt: t0}})
	if _, ok := h.m.Get("i1", Readiness); ok {
		t.Fatal("a regular init container is probed")
	}
	if _, ok := h.m.Get("c1", Readiness); ok {
		t.Fatal("a container without probes is probed")
	}
	h.run(t)
	c := h.exec.expect(t, "ready")
	if c.containerID != "s1" {
		t.Fatalf("probe of %s, want the sidecar", c.containerID)
	}
	c.answer(0)
	if u := h.update(t); u.ContainerName != "proxy" || u.Result != Success {
		t.Fatalf("update = %+v", u)
	}
	h.m.RemovePod("uid-1")
	if _, ok := h.m.Get("s1", Readiness); ok {
		t.Fatal("results kept after RemovePod")
	}
}

func TestHTTPReadinessThroughManager(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	port := serverPort(t, srv.URL)
	clock := clocktesting.NewFakeClock(t0)
	updates := make(chan Update, 10)
	m, err := NewManager(Config{Prober: NewProber(nil), Clock: clock, OnUpdate: func(u Update) { updates <- u }})
	if err != nil {
		t.Fatal(err)
	}
	pod := probedPod(corev1.Container{
		Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http"), Path: "/healthz"}}},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	m.UpdatePod(pod, "127.0.0.1", []Container{{Name: "app", ID: "c1", StartedAt: t0}})
	select {
	case u := <-updates:
		if u.Kind != Readiness || u.Result != Success {
			t.Fatalf("update = %+v", u)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no readiness update")
	}
}

func TestNewManagerAndRun(t *testing.T) {
	t.Parallel()
	if _, err := NewManager(Config{}); err == nil {
		t.Fatal("no prober: no error")
	}
	m, err := NewManager(Config{Prober: NewProber(nil)})
	if err != nil {
		t.Fatal(err)
	}
	// Run returns once its context ends; a second Run is refused.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(ctx); err == nil {
		t.Fatal("second Run: no error")
	}
}

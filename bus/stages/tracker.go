package stages

import (
	"container/heap"
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/lifecycle"
)

// The resources a Tracker reads.
const (
	discoveryGroup    = "discovery.k8s.io"
	coordinationGroup = "coordination.k8s.io"
)

// Stage is the way from one lifecycle step to the next.
type Stage struct {
	From, To lifecycle.Step
}

// String is the stage's label value, e.g. "created_scheduled".
func (s Stage) String() string { return string(s.From) + "_" + string(s.To) }

// Stages are the stages between consecutive lifecycle.Steps, in order.
var Stages = func() []Stage {
	var out []Stage
	for i := 1; i < len(lifecycle.Steps); i++ {
		out = append(out, Stage{From: lifecycle.Steps[i-1], To: lifecycle.Steps[i]})
	}
	return out
}()

// Observation is one pod's time over one stage.
type Observation struct {
	Stage    Stage
	Duration time.Duration
}

// DropReason says why a Tracker stopped following a pod before it was done.
type DropReason string

// Drop reasons.
const (
	// DropCapacity: the tracker was full (Limits.MaxPods pods, or
	// Limits.MaxPending pods waiting for the proxies) and forgot its
	// stalest pod to make room.
	DropCapacity DropReason = "capacity"
	// DropStale: the pod made no progress for Limits.StaleAfter and was
	// not ready. (A ready pod that no EndpointSlice lists within
	// StaleAfter is forgotten too, without counting: it has no Service.)
	DropStale DropReason = "stale"
	// DropGap: a GAP event, or the stream being created again, cleared
	// the tracker.
	DropGap DropReason = "gap"
)

// DropReasons are all the drop reasons.
var DropReasons = []DropReason{DropCapacity, DropStale, DropGap}

// Outcome is what one event makes the Tracker report.
type Outcome struct {
	Observed []Observation
	// Dropped counts the pods the tracker stopped following, by reason
	// (nil when none).
	Dropped map[DropReason]int
}

func (o *Outcome) observe(s Stage, d time.Duration) {
	o.Observed = append(o.Observed, Observation{Stage: s, Duration: max(d, 0)})
}

func (o *Outcome) drop(r DropReason, n int) {
	if n == 0 {
		return
	}
	if o.Dropped == nil {
		o.Dropped = map[DropReason]int{}
	}
	o.Dropped[r] += n
}

// Event is one bus event as a Tracker reads it. Time is when the bus stored
// it. The object is decoded into the field of its kind (Pod for core pods,
// holding only what lifecycle.PodReached reads when read from the bus,
// Slice for discovery.k8s.io endpointslices, Lease for coordination.k8s.io
// leases) when Tracker.Needs said so; DELETED events need none.
type Event struct {
	Type     bus.EventType
	Revision int64
	Key      bus.ObjectKey
	Time     time.Time
	Pod      *corev1.Pod
	Slice    *discoveryv1.EndpointSlice
	Lease    *coordinationv1.Lease
}

// Limits bound a Tracker's memory.
type Limits struct {
	// MaxPods is how many pods it follows at once (default 100,000).
	MaxPods int
	// MaxPending is how many pods listed in EndpointSlices it keeps waiting
	// for the proxies to program them (default 100,000).
	MaxPending int
	// StaleAfter is how long a pod is followed without reaching a new step,
	// and how long a pod listed in an EndpointSlice waits for the proxies
	// (default 10 minutes).
	StaleAfter time.Duration
}

// Default limits.
const (
	DefaultMaxPods    = 100_000
	DefaultMaxPending = 100_000
	DefaultStaleAfter = 10 * time.Minute
)

func (l *Limits) defaults() {
	if l.MaxPods <= 0 {
		l.MaxPods = DefaultMaxPods
	}
	if l.MaxPending <= 0 {
		l.MaxPending = DefaultMaxPending
	}
	if l.StaleAfter <= 0 {
		l.StaleAfter = DefaultStaleAfter
	}
}

type podKey struct{ namespace, name string }

// podState is a followed pod: the steps it reached and when.
type podState struct {
	key   podKey
	times lifecycle.Times
	last  time.Time // when it last reached a step
	index int       // in the tracker's heap
}

func (p *podState) ready() bool {
	_, ok := p.times[lifecycle.Ready]
	return ok
}

// pending is a pod an EndpointSlice listed as ready at revision rev, time
// at, waiting for the proxies.
type pending struct {
	key  podKey
	rev  int64
	at   time.Time
	dead bool // the pod was deleted: no proxy will program it
}

// Tracker follows pods through the lifecycle steps. It is not safe for
// concurrent use.
type Tracker struct {
	lim     Limits
	pods    map[podKey]*podState
	stale   podHeap    // the followed pods, least recently progressed first
	pending []*pending // in stream (so revision and time) order
	waiting map[podKey]*pending
	// proxies is the highest programmed revision seen of every proxy.
	proxies map[string]int64
}

// NewTracker returns an empty tracker.
func NewTracker(l Limits) *Tracker {
	l.defaults()
	t := &Tracker{lim: l}
	t.clear()
	return t
}

func (t *Tracker) clear() {
	t.pods, t.stale, t.pending = map[podKey]*podState{}, nil, nil
	t.waiting, t.proxies = map[podKey]*pending{}, map[string]int64{}
}

// Pods is how many pods the tracker follows.
func (t *Tracker) Pods() int { return len(t.pods) }

// Pending is how many pods listed in EndpointSlices wait for the proxies.
func (t *Tracker) Pending() int { return len(t.pending) }

type kind int

const (
	other kind = iota
	podKind
	sliceKind
	leaseKind
)

func kindOf(k bus.ObjectKey) kind {
	switch {
	case k.Group == "" && k.Resource == "pods":
		return podKind
	case k.Group == discoveryGroup && k.Resource == "endpointslices":
		return sliceKind
	case k.Group == coordinationGroup && k.Resource == "leases":
		if _, ok := lifecycle.ProxyNode(k.Namespace, k.Name); ok {
			return leaseKind
		}
	}
	return other
}

// Needs reports whether Apply will read the object of an event of type typ
// about key, so that the caller decodes only those.
func (t *Tracker) Needs(typ bus.EventType, key bus.ObjectKey) bool {
	if typ != bus.Added && typ != bus.Modified {
		return false
	}
	switch kindOf(key) {
	case podKind:
		if typ == bus.Added {
			return true
		}
		_, ok := t.pods[podKey{key.Namespace, key.Name}]
		return ok
	case sliceKind:
		return len(t.pods) > 0
	case leaseKind:
		// A proxy's start sets where it starts. Otherwise a Lease
		// matters only to pods waiting: one stored before their
		// EndpointSlice cannot cover its revision.
		return len(t.pending) > 0 || typ == bus.Added
	}
	return false
}

// Reset forgets everything, as after a gap, and returns the pods it
// stopped following.
func (t *Tracker) Reset() Outcome {
	var out Outcome
	out.drop(DropGap, len(t.pods))
	t.clear()
	return out
}

// Apply feeds the tracker the next event of the stream.
func (t *Tracker) Apply(e Event) Outcome {
	if e.Type == bus.Gap {
		return t.Reset()
	}
	var out Outcome
	t.expire(e.Time, &out)
	switch kindOf(e.Key) {
	case podKind:
		t.pod(e, &out)
	case sliceKind:
		t.slice(e, &out)
	case leaseKind:
		t.lease(e, &out)
	}
	return out
}

// expire forgets the pods that made no progress for StaleAfter and the
// pending pods the proxies had StaleAfter to program.
func (t *Tracker) expire(now time.Time, out *Outcome) {
	cutoff := now.Add(-t.lim.StaleAfter)
	for len(t.stale) > 0 && t.stale[0].last.Before(cutoff) {
		p := t.stale[0]
		if !p.ready() {
			out.drop(DropStale, 1)
		}
		t.forget(p)
	}
	n := 0
	for n < len(t.pending) && t.pending[n].at.Before(cutoff) {
		t.unwait(t.pending[n])
		t.pending[n] = nil
		n++
	}
	t.pending = t.pending[n:]
}

func (t *Tracker) forget(p *podState) {
	heap.Remove(&t.stale, p.index)
	delete(t.pods, p.key)
}

func (t *Tracker) unwait(p *pending) {
	if t.waiting[p.key] == p {
		delete(t.waiting, p.key)
	}
}

// reach records the steps a pod reached at at and observes the stages
// they end.
func (t *Tracker) reach(p *podState, steps []lifecycle.Step, at time.Time, out *Outcome) {
	fresh := p.times.Observe(steps, at)
	if len(fresh) == 0 {
		return
	}
	isFresh := map[lifecycle.Step]bool{}
	for _, s := range fresh {
		isFresh[s] = true
	}
	for _, iv := range p.times.Intervals() {
		if isFresh[iv.To] {
			out.observe(Stage{From: iv.From, To: iv.To}, iv.Duration)
		}
	}
	p.last = at
	heap.Fix(&t.stale, p.index)
}

func (t *Tracker) pod(e Event, out *Outcome) {
	key := podKey{e.Key.Namespace, e.Key.Name}
	p := t.pods[key]
	switch e.Type {
	case bus.Deleted:
		if p != nil {
			t.forget(p)
		}
		if w := t.waiting[key]; w != nil {
			w.dead = true
			delete(t.waiting, key)
		}
	case bus.Added:
		if e.Pod == nil {
			return
		}
		if p != nil { // not seen deleted: start again
			t.forget(p)
		}
		if w := t.waiting[key]; w != nil {
			w.dead = true
			delete(t.waiting, key)
		}
		if len(t.pods) >= t.lim.MaxPods {
			out.drop(DropCapacity, 1)
			t.forget(t.stale[0])
		}
		p = &podState{key: key, times: lifecycle.Times{}, last: e.Time}
		t.pods[key] = p
		heap.Push(&t.stale, p)
		t.reach(p, lifecycle.PodReached(e.Pod), e.Time, out)
	case bus.Modified:
		if p == nil || e.Pod == nil {
			return
		}
		t.reach(p, lifecycle.PodReached(e.Pod), e.Time, out)
	}
}

// toEndpoints are the steps up to being in an EndpointSlice.
var toEndpoints = lifecycle.Steps[:lifecycle.Index(lifecycle.InEndpoints)+1]

// slice observes ready→endpoints for the followed ready pods the slice
// lists as ready; they then wait for the proxies.
func (t *Tracker) slice(e Event, out *Outcome) {
	if e.Type == bus.Deleted || e.Slice == nil {
		return
	}
	for _, name := range lifecycle.ReadyPods(e.Slice) {
		key := podKey{e.Key.Namespace, name}
		p := t.pods[key]
		if p == nil || !p.ready() {
			// Listed before it was ready (a Service that publishes
			// not-ready addresses): not a measure of readiness.
			continue
		}
		t.reach(p, toEndpoints, e.Time, out)
		t.forget(p)
		if len(t.pending) >= t.lim.MaxPending {
			out.drop(DropCapacity, 1)
			t.unwait(t.pending[0])
			t.pending[0] = nil
			t.pending = t.pending[1:]
		}
		w := &pending{key: key, rev: e.Revision, at: e.Time}
		t.pending = append(t.pending, w)
		t.waiting[key] = w
	}
}

// lease observes endpoints→programmed, once per pod and proxy, for the
// pending pods listed at revisions the proxy's Lease newly covers. A
// proxy's first Lease (ADDED) only sets where it starts: a proxy that
// starts programs everything at once, which measures its start, not the
// propagation of a change.
func (t *Tracker) lease(e Event, out *Outcome) {
	node, _ := lifecycle.ProxyNode(e.Key.Namespace, e.Key.Name)
	if e.Type == bus.Deleted {
		delete(t.proxies, node)
		return
	}
	rev, at, ok := lifecycle.ReadProgrammed(e.Lease)
	if !ok {
		return
	}
	if at.IsZero() {
		at = e.Time
	}
	prev, known := t.proxies[node]
	if rev <= prev {
		return
	}
	t.proxies[node] = rev
	if !known && e.Type == bus.Added {
		return
	}
	i := sort.Search(len(t.pending), func(i int) bool { return t.pending[i].rev > prev })
	for ; i < len(t.pending) && t.pending[i].rev <= rev; i++ {
		if w := t.pending[i]; !w.dead {
			out.observe(Stage{From: lifecycle.InEndpoints, To: lifecycle.Programmed}, at.Sub(w.at))
		}
	}
}

// podHeap orders pods by when they last progressed.
type podHeap []*podState

func (h podHeap) Len() int           { return len(h) }
func (h podHeap) Less(i, j int) bool { return h[i].last.Before(h[j].last) }
func (h podHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

// Push implements heap.Interface.
func (h *podHeap) Push(x any) {
	p := x.(*podState)
	p.index = len(*h)
	*h = append(*h, p)
}

// Pop implements heap.Interface.
func (h *podHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	p.index = -1
	return p
}

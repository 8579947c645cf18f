package stages

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/lifecycle"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// at is t0 plus n milliseconds.
func at(n int) time.Time { return t0.Add(ms(n)) }

// podStep builds a pod that reached step s (by the fields a real pod shows).
func podStep(name string, s lifecycle.Step) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	i := lifecycle.Index(s)
	if i >= lifecycle.Index(lifecycle.Scheduled) {
		p.Spec.NodeName = "node-1"
	}
	if i >= lifecycle.Index(lifecycle.Sandbox) {
		p.Status.PodIP = "10.0.0.7"
	}
	if i >= lifecycle.Index(lifecycle.Started) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	}
	if i >= lifecycle.Index(lifecycle.Ready) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	return p
}

func podEv(typ bus.EventType, rev int64, ms int, name string, s lifecycle.Step) Event {
	e := Event{Type: typ, Revision: rev, Time: at(ms), Key: bus.ObjectKey{Resource: "pods", Namespace: "default", Name: name}}
	if typ != bus.Deleted {
		e.Pod = podStep(name, s)
	}
	return e
}

func added(rev int64, ms int, name string, s lifecycle.Step) Event {
	return podEv(bus.Added, rev, ms, name, s)
}

func modified(rev int64, ms int, name string, s lifecycle.Step) Event {
	return podEv(bus.Modified, rev, ms, name, s)
}

func deleted(rev int64, ms int, name string) Event { return podEv(bus.Deleted, rev, ms, name, "") }

// slice lists pods; a name with a "!" prefix is listed not ready.
func slice(rev int64, ms int, pods ...string) Event {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: "default"}}
	for _, name := range pods {
		ready := true
		if name[0] == '!' {
			name, ready = name[1:], false
		}
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.7"},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: name}})
	}
	return Event{Type: bus.Modified, Revision: rev, Time: at(ms), Slice: s,
		Key: bus.ObjectKey{Group: discoveryGroup, Resource: "endpointslices", Namespace: "default", Name: s.Name}}
}

// lease is node's proxy Lease saying it programmed revision prog at
// progMS (no time when progMS < 0; no annotations when prog is 0).
func lease(typ bus.EventType, rev int64, ms int, node string, prog int64, progMS int) Event {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: lifecycle.ProxyLeaseName(node), Namespace: lifecycle.ProxyLeaseNamespace}}
	if prog > 0 {
		lifecycle.SetProgrammed(l, prog, at(progMS))
		if progMS < 0 {
			delete(l.Annotations, lifecycle.ProgrammedTimeAnnotation)
		}
	}
	return Event{Type: typ, Revision: rev, Time: at(ms), Lease: l,
		Key: bus.ObjectKey{Group: coordinationGroup, Resource: "leases", Namespace: l.Namespace, Name: l.Name}}
}

func gap(rev int64) Event { return Event{Type: bus.Gap, Revision: rev, Time: at(0)} }

func obs(stage string, d time.Duration) Observation {
	for _, s := range Stages {
		if s.String() == stage {
			return Observation{Stage: s, Duration: d}
		}
	}
	panic("no stage " + stage)
}

// upToReady takes pod name from created at base ms to ready, a step every 10 ms.
func upToReady(rev int64, base int, name string) []Event {
	return []Event{
		added(rev, base, name, lifecycle.Created),
		modified(rev+1, base+10, name, lifecycle.Scheduled),
		modified(rev+2, base+20, name, lifecycle.Sandbox),
		modified(rev+3, base+30, name, lifecycle.Started),
		modified(rev+4, base+40, name, lifecycle.Ready),
	}
}

var readyObs = []Observation{obs("created_scheduled", ms(10)), obs("scheduled_sandbox", ms(10)),
	obs("sandbox_started", ms(10)), obs("started_ready", ms(10))}

func concat[T any](parts ...[]T) []T {
	var out []T
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestTracker(t *testing.T) {
	cases := []struct {
		name    string
		limits  Limits
		events  []Event
		want    []Observation
		dropped map[DropReason]int
	}{
		{name: "every step",
			events: concat(upToReady(10, 0, "a"), []Event{
				slice(20, 65, "a"),
				lease(bus.Modified, 21, 70, "node-1", 20, 72),
			}),
			want: concat(readyObs, []Observation{obs("ready_endpoints", ms(25)), obs("endpoints_programmed", ms(7))}),
		},
		{name: "steps skipped in one revision observe 0",
			events: []Event{
				added(10, 0, "a", lifecycle.Scheduled),
				modified(11, 30, "a", lifecycle.Ready),
			},
			want: []Observation{obs("created_scheduled", 0), obs("scheduled_sandbox", ms(30)),
				obs("sandbox_started", 0), obs("started_ready", 0)},
		},
		{name: "a revision that shows no new step observes nothing",
			events: []Event{
				added(10, 0, "a", lifecycle.Created),
				modified(11, 10, "a", lifecycle.Scheduled),
				modified(12, 20, "a", lifecycle.Scheduled),
				modified(13, 30, "a", lifecycle.Created), // a step is kept once reached
			},
			want: []Observation{obs("created_scheduled", ms(10))},
		},
		{name: "pods not seen created are not followed",
			events: []Event{
				modified(10, 0, "a", lifecycle.Scheduled),
				modified(11, 10, "a", lifecycle.Ready),
				slice(12, 20, "a"),
				lease(bus.Modified, 13, 30, "node-1", 12, 30),
			},
		},
		{name: "an EndpointSlice counts once the pod is ready, and once",
			events: concat([]Event{
				added(10, 0, "a", lifecycle.Created),
				slice(11, 5, "a"), // published before ready: not measured
			}, upToReady(12, 0, "a")[1:], []Event{
				slice(20, 50, "!a"), // listed not ready
				slice(21, 60, "a"),
				slice(22, 70, "a"),
			}),
			want: concat(readyObs, []Observation{obs("ready_endpoints", ms(20))}),
		},
		{name: "one observation per proxy, when its revision reaches the slice's",
			events: concat(upToReady(10, 0, "a"), []Event{
				slice(20, 50, "a"),
				lease(bus.Modified, 21, 55, "node-1", 19, 55), // not yet
				lease(bus.Modified, 22, 60, "node-1", 20, 61),
				lease(bus.Modified, 23, 70, "node-1", 22, 71), // again: no
				lease(bus.Modified, 24, 80, "node-2", 23, 90),
				lease(bus.Modified, 25, 85, "node-2", 23, 99), // same revision: no
				lease(bus.Modified, 26, 86, "node-2", 19, 99), // behind (a proxy restarted)
				lease(bus.Modified, 27, 87, "node-2", 26, 99), // covered already: no
			}),
			want: concat(readyObs, []Observation{obs("ready_endpoints", ms(10)),
				obs("endpoints_programmed", ms(11)), obs("endpoints_programmed", ms(40))}),
		},
		{name: "a proxy's first Lease sets its start",
			events: concat(upToReady(10, 0, "a"), []Event{
				slice(20, 50, "a"),
				lease(bus.Added, 21, 60, "node-1", 20, 60),
				lease(bus.Modified, 22, 70, "node-1", 21, 70),
			}),
			want: concat(readyObs, []Observation{obs("ready_endpoints", ms(10))}),
		},
		{name: "a proxy deleted and created again starts again",
			events: concat(upToReady(10, 0, "a"), []Event{
				lease(bus.Modified, 20, 45, "node-1", 19, 45),
				lease(bus.Deleted, 21, 46, "node-1", 0, 0),
				slice(22, 50, "a"),
				lease(bus.Added, 23, 60, "node-1", 22, 60),
			}),
			want: concat(readyObs, []Observation{obs("ready_endpoints", ms(10))}),
		},
		{name: "two pods in one slice, programmed by one Lease",
			events: concat(upToReady(10, 0, "a"), upToReady(20, 100, "b"), []Event{
				slice(30, 150, "a", "b"),
				lease(bus.Modified, 31, 160, "node-1", 30, 170),
			}),
			want: concat(readyObs, readyObs, []Observation{obs("ready_endpoints", ms(110)), obs("ready_endpoints", ms(10)),
				obs("endpoints_programmed", ms(20)), obs("endpoints_programmed", ms(20))}),
		},
		{name: "a Lease without a programmed time is read at its event's time; no Lease revision, no observation",
			events: concat(upToReady(10, 0, "a"), []Event{
				slice(20, 50, "a"),
				lease(bus.Modified, 21, 60, "node-1", 0, 0),
				lease(bus.Modified, 22, 65, "node-1", 20, -1),
			}),
			want: concat(readyObs, []Observation{obs("ready_endpoints", ms(10)), obs("endpoints_programmed", ms(15))}),
		},
		{name: "a programmed time before the slice's (clock skew) observes 0",
			events: concat(upToReady(10, 0, "a"), []Event{
				slice(20, 50, "a"),
				lease(bus.Modified, 21, 60, "node-1", 20, 40),
			}),
			want: concat(readyObs, []Observation{obs("ready_endpoints", ms(10)), obs("endpoints_programmed", 0)}),
		},
		{name: "a pod deleted before a proxy programmed it is not observed",
			events: concat(upToReady(10, 0, "a"), []Event{
				slice(20, 50, "a"),
				deleted(21, 55, "a"),
				lease(bus.Modified, 22, 60, "node-1", 21, 60),
			}),
			want: concat(readyObs, []Observation{obs("ready_endpoints", ms(10))}),
		},
		{name: "a deleted pod is forgotten; one of the same name is new",
			events: concat([]Event{
				added(10, 0, "a", lifecycle.Created),
				deleted(11, 5, "a"),
				modified(12, 8, "a", lifecycle.Scheduled),
			}, upToReady(20, 100, "a")),
			want: readyObs,
		},
		{name: "a gap clears everything",
			events: concat([]Event{
				added(10, 0, "a", lifecycle.Created),
				added(11, 0, "b", lifecycle.Created),
			}, upToReady(12, 0, "c"), []Event{
				slice(20, 50, "c"),
				gap(21),
				modified(22, 60, "a", lifecycle.Scheduled),
				lease(bus.Modified, 23, 70, "node-1", 22, 70),
			}),
			want:    concat(readyObs, []Observation{obs("ready_endpoints", ms(10))}),
			dropped: map[DropReason]int{DropGap: 2},
		},
		{name: "a pod without progress for StaleAfter is dropped",
			limits: Limits{StaleAfter: time.Second},
			events: []Event{
				added(10, 0, "a", lifecycle.Created),
				modified(11, 500, "a", lifecycle.Scheduled),
				modified(12, 1400, "a", lifecycle.Sandbox), // 900 ms after the last step: kept
				added(13, 2500, "b", lifecycle.Created),    // 1100 ms: a is dropped
				modified(14, 2600, "a", lifecycle.Started),
			},
			want:    []Observation{obs("created_scheduled", ms(500)), obs("scheduled_sandbox", ms(900))},
			dropped: map[DropReason]int{DropStale: 1},
		},
		{name: "a ready pod without endpoints is forgotten without counting",
			limits: Limits{StaleAfter: time.Second},
			events: concat(upToReady(10, 0, "a"), []Event{
				added(20, 2000, "b", lifecycle.Created),
				slice(21, 2100, "a"),
			}),
			want: readyObs,
		},
		{name: "pending pods wait StaleAfter for the proxies",
			limits: Limits{StaleAfter: time.Second},
			events: concat(upToReady(10, 0, "a"), []Event{slice(15, 50, "a")}, upToReady(20, 1000, "b"), []Event{
				slice(31, 1050, "b"),
				lease(bus.Modified, 32, 1100, "node-1", 31, 1100), // a's wait is over
			}),
			want: concat(readyObs, []Observation{obs("ready_endpoints", ms(10))}, readyObs,
				[]Observation{obs("ready_endpoints", ms(10)), obs("endpoints_programmed", ms(50))}),
		},
		{name: "a full tracker forgets its stalest pod",
			limits: Limits{MaxPods: 2},
			events: []Event{
				added(10, 0, "a", lifecycle.Created),
				added(11, 10, "b", lifecycle.Created),
				modified(12, 20, "a", lifecycle.Scheduled), // a progressed last
				added(13, 30, "c", lifecycle.Created),      // b goes
				modified(14, 40, "b", lifecycle.Scheduled),
				modified(15, 50, "c", lifecycle.Scheduled),
				modified(16, 60, "a", lifecycle.Sandbox),
			},
			want: []Observation{obs("created_scheduled", ms(20)), obs("created_scheduled", ms(20)),
				obs("scheduled_sandbox", ms(40))},
			dropped: map[DropReason]int{DropCapacity: 1},
		},
		{name: "a full pending list forgets its oldest pod",
			limits: Limits{MaxPending: 1},
			events: concat(upToReady(10, 0, "a"), upToReady(20, 0, "b"), []Event{
				slice(30, 50, "a"),
				slice(31, 60, "b"),
				lease(bus.Modified, 32, 70, "node-1", 31, 70),
			}),
			want: concat(readyObs, readyObs, []Observation{obs("ready_endpoints", ms(10)), obs("ready_endpoints", ms(20)),
				obs("endpoints_programmed", ms(10))}),
			dropped: map[DropReason]int{DropCapacity: 1},
		},
		{name: "other objects are ignored",
			events: concat(upToReady(10, 0, "a"), []Event{
				{Type: bus.Modified, Revision: 20, Time: at(50), Slice: slice(0, 0, "a").Slice,
					Key: bus.ObjectKey{Group: "example.com", Resource: "endpointslices", Namespace: "default", Name: "x"}},
				{Type: bus.Modified, Revision: 21, Time: at(60), Lease: lease(bus.Modified, 0, 0, "", 20, 60).Lease,
					Key: bus.ObjectKey{Group: coordinationGroup, Resource: "leases", Namespace: lifecycle.ProxyLeaseNamespace, Name: "node-1"}},
			}),
			want: readyObs,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := NewTracker(c.limits)
			var got []Observation
			dropped := map[DropReason]int{}
			for i, e := range c.events {
				if e.Type == bus.Modified && e.Pod != nil && !tr.Needs(e.Type, e.Key) {
					e.Pod = nil // as Run leaves it undecoded
				}
				out := tr.Apply(e)
				got = append(got, out.Observed...)
				for r, n := range out.Dropped {
					dropped[r] += n
				}
				if tr.Pods() > tr.lim.MaxPods || tr.Pending() > tr.lim.MaxPending {
					t.Fatalf("event %d: %d pods, %d pending: over the limits", i, tr.Pods(), tr.Pending())
				}
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("observed\n%s\nwant\n%s", fmtObs(got), fmtObs(c.want))
			}
			if c.dropped == nil {
				c.dropped = map[DropReason]int{}
			}
			if !reflect.DeepEqual(dropped, c.dropped) {
				t.Errorf("dropped %v, want %v", dropped, c.dropped)
			}
		})
	}
}

func fmtObs(o []Observation) string {
	s := ""
	for _, x := range o {
		s += fmt.Sprintf("  %s %v\n", x.Stage, x.Duration)
	}
	return s
}

func TestNeeds(t *testing.T) {
	tr := NewTracker(Limits{})
	podKey := bus.ObjectKey{Resource: "pods", Namespace: "default", Name: "a"}
	sliceKey := slice(1, 0).Key
	leaseKey := lease(bus.Added, 1, 0, "node-1", 0, 0).Key
	kubeletLease := bus.ObjectKey{Group: coordinationGroup, Resource: "leases", Namespace: lifecycle.ProxyLeaseNamespace, Name: "node-1"}
	cases := []struct {
		typ  bus.EventType
		key  bus.ObjectKey
		want bool
	}{
		{bus.Added, podKey, true},
		{bus.Modified, podKey, false}, // not followed
		{bus.Deleted, podKey, false},
		{bus.Modified, sliceKey, false}, // nothing followed
		{bus.Added, leaseKey, true},     // a proxy's start
		{bus.Modified, leaseKey, false}, // nothing waits
		{bus.Added, kubeletLease, false},
	}
	for _, c := range cases {
		if got := tr.Needs(c.typ, c.key); got != c.want {
			t.Errorf("empty tracker: Needs(%s, %v) = %v, want %v", c.typ, c.key, got, c.want)
		}
	}
	for _, e := range concat(upToReady(10, 0, "a"), upToReady(20, 0, "b")) {
		tr.Apply(e)
	}
	tr.Apply(slice(30, 50, "b"))
	for _, c := range []struct {
		typ bus.EventType
		key bus.ObjectKey
	}{{bus.Modified, podKey}, {bus.Modified, sliceKey}, {bus.Modified, leaseKey}} {
		if !tr.Needs(c.typ, c.key) {
			t.Errorf("Needs(%s, %v) = false with a pod followed and one pending", c.typ, c.key)
		}
	}
}

func TestStages(t *testing.T) {
	want := []string{"created_scheduled", "scheduled_sandbox", "sandbox_started", "started_ready", "ready_endpoints", "endpoints_programmed"}
	var got []string
	for _, s := range Stages {
		got = append(got, s.String())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stages %v, want %v", got, want)
	}
}

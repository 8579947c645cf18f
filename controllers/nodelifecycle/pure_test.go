package nodelifecycle

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func mtime(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }

func lease(renew time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: renew}}}
}

func readyNode(status corev1.ConditionStatus, beat time.Time) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))}}
	if status != "" {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.NewTime(beat), LastTransitionTime: metav1.NewTime(beat)}}
	}
	return n
}

func TestObserve(t *testing.T) {
	t.Parallel()
	first := observe(nil, readyNode(corev1.ConditionTrue, t0), lease(t0), t0.Add(time.Second))
	tests := []struct {
		name      string
		prev      *heartbeat
		node      *corev1.Node
		lease     *coordinationv1.Lease
		now       time.Time
		wantProbe time.Time
	}{
		{name: "first sight starts the clock", node: readyNode(corev1.ConditionTrue, t0.Add(-time.Hour)), now: t0, wantProbe: t0},
		{name: "a renewed lease", prev: &first, lease: lease(t0.Add(10 * time.Second)), now: t0.Add(11 * time.Second), wantProbe: t0.Add(11 * time.Second)},
		{name: "the same lease again", prev: &first, lease: lease(t0), now: t0.Add(30 * time.Second), wantProbe: first.probe},
		{name: "a new Ready heartbeat", prev: &first, node: readyNode(corev1.ConditionTrue, t0.Add(5*time.Second)), now: t0.Add(20 * time.Second), wantProbe: t0.Add(20 * time.Second)},
		{name: "the same node again", prev: &first, node: readyNode(corev1.ConditionUnknown, t0), now: t0.Add(50 * time.Second), wantProbe: first.probe},
		{name: "a lease renewed into the past still counts", prev: &first, lease: lease(t0.Add(-time.Minute)), now: t0.Add(5 * time.Second), wantProbe: t0.Add(5 * time.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := observe(tc.prev, tc.node, tc.lease, tc.now)
			if !got.probe.Equal(tc.wantProbe) {
				t.Fatalf("probe = %v, want %v", got.probe, tc.wantProbe)
			}
		})
	}
}

func TestSilentFor(t *testing.T) {
	t.Parallel()
	h := heartbeat{probe: t0}
	tests := []struct {
		name string
		node *corev1.Node
		now  time.Time
		want time.Duration
	}{
		{name: "fresh", node: readyNode(corev1.ConditionTrue, t0), now: t0.Add(10 * time.Second), want: 30 * time.Second},
		{name: "at the limit", node: readyNode(corev1.ConditionTrue, t0), now: t0.Add(40 * time.Second), want: 0},
		{name: "overdue", node: readyNode(corev1.ConditionTrue, t0), now: t0.Add(41 * time.Second), want: -time.Second},
		{name: "never posted: startup grace", node: readyNode("", t0), now: t0.Add(41 * time.Second), want: 19 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := silentFor(tc.node, h, tc.now, 40*time.Second, 60*time.Second); got != tc.want {
				t.Fatalf("silentFor = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStaleConditions(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	withPressure := readyNode(corev1.ConditionTrue, t0)
	withPressure.Status.Conditions = append(withPressure.Status.Conditions,
		corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: metav1.NewTime(t0)},
		corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse})
	tests := []struct {
		name        string
		node        *corev1.Node
		wantChanged bool
		want        []string // type=status/reason
	}{
		{name: "ready node goes unknown", node: withPressure, wantChanged: true, want: []string{
			"Ready=Unknown/NodeStatusUnknown", "MemoryPressure=Unknown/NodeStatusUnknown", "NetworkUnavailable=False/",
			"DiskPressure=Unknown/NodeStatusNeverUpdated", "PIDPressure=Unknown/NodeStatusNeverUpdated"}},
		{name: "never posted", node: readyNode("", t0), wantChanged: true, want: []string{
			"Ready=Unknown/NodeStatusNeverUpdated", "MemoryPressure=Unknown/NodeStatusNeverUpdated",
			"DiskPressure=Unknown/NodeStatusNeverUpdated", "PIDPressure=Unknown/NodeStatusNeverUpdated"}},
		{name: "already unknown", node: func() *corev1.Node {
			n := readyNode(corev1.ConditionUnknown, t0)
			for _, typ := range watchedConditions[1:] {
				n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: typ, Status: corev1.ConditionUnknown})
			}
			return n
		}(), want: []string{"Ready=Unknown/KubeletReady", "MemoryPressure=Unknown/", "DiskPressure=Unknown/", "PIDPressure=Unknown/"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := tc.node.DeepCopy()
			conds, changed := staleConditions(tc.node, now)
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			var got []string
			for _, c := range conds {
				got = append(got, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("conditions = %q, want %q", got, tc.want)
			}
			if !reflect.DeepEqual(before, tc.node) {
				t.Error("the cached node was modified")
			}
			if r := condition(conds, corev1.NodeReady); tc.wantChanged && r.Status == corev1.ConditionUnknown {
				if !r.LastTransitionTime.Time.Equal(now) {
					t.Errorf("Ready transition = %v, want %v", r.LastTransitionTime, now)
				}
				if old := condition(tc.node.Status.Conditions, corev1.NodeReady); old != nil && !r.LastHeartbeatTime.Equal(&old.LastHeartbeatTime) {
					t.Errorf("heartbeat changed to %v", r.LastHeartbeatTime)
				}
				if r.Reason == ReasonNodeStatusUnknown && r.Message != MessageNodeStatusUnknown {
					t.Errorf("message = %q", r.Message)
				}
			}
		})
	}
}

// taintsString renders taints as key:effect[@seconds since t0].
func taintsString(taints []corev1.Taint) string {
	var out []string
	for _, t := range taints {
		s := t.Key + ":" + string(t.Effect)
		if t.TimeAdded != nil {
			s += fmt.Sprintf("@%d", int(t.TimeAdded.Sub(t0).Seconds()))
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func TestDesiredTaints(t *testing.T) {
	t.Parallel()
	const (
		unreachNS  = corev1.TaintNodeUnreachable + ":NoSchedule"
		notReadyNS = corev1.TaintNodeNotReady + ":NoSchedule"
	)
	now := t0.Add(100 * time.Second)
	node := func(ready corev1.ConditionStatus, taints ...corev1.Taint) *corev1.Node {
		n := readyNode(ready, t0)
		n.Spec.Taints = taints
		return n
	}
	noExec := func(key string, at time.Time) corev1.Taint {
		return corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute, TimeAdded: mtime(at)}
	}
	noSched := func(key string) corev1.Taint { return corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule} }
	other := corev1.Taint{Key: "example.com/dedicated", Value: "x", Effect: corev1.TaintEffectNoExecute}
	tests := []struct {
		name                            string
		node                            *corev1.Node
		noExecute, mayAdd               bool
		want                            string
		wantChanged, wantAdds, wantHeld bool
	}{
		{name: "healthy: nothing", node: node(corev1.ConditionTrue), noExecute: true, mayAdd: true},
		{name: "healthy: stale taints go, others stay",
			node:      node(corev1.ConditionTrue, other, noSched(corev1.TaintNodeUnreachable), noExec(corev1.TaintNodeUnreachable, t0)),
			noExecute: true, want: "example.com/dedicated:NoExecute", wantChanged: true},
		{name: "unknown: both taints", node: node(corev1.ConditionUnknown), noExecute: true, mayAdd: true,
			want: unreachNS + " " + corev1.TaintNodeUnreachable + ":NoExecute@100", wantChanged: true, wantAdds: true},
		{name: "unknown, limiter says no: NoSchedule only", node: node(corev1.ConditionUnknown), noExecute: true,
			want: unreachNS, wantChanged: true, wantHeld: true},
		{name: "unknown, all tainted: unchanged and time kept",
			node:      node(corev1.ConditionUnknown, noSched(corev1.TaintNodeUnreachable), noExec(corev1.TaintNodeUnreachable, t0.Add(3*time.Second))),
			noExecute: true, want: unreachNS + " " + corev1.TaintNodeUnreachable + ":NoExecute@3"},
		{name: "false: not-ready", node: node(corev1.ConditionFalse), noExecute: true, mayAdd: true,
			want: notReadyNS + " " + corev1.TaintNodeNotReady + ":NoExecute@100", wantChanged: true, wantAdds: true},
		{name: "unknown to false swaps without the limiter",
			node:      node(corev1.ConditionFalse, noSched(corev1.TaintNodeUnreachable), noExec(corev1.TaintNodeUnreachable, t0)),
			noExecute: true, want: notReadyNS + " " + corev1.TaintNodeNotReady + ":NoExecute@100", wantChanged: true},
		{name: "full disruption removes NoExecute",
			node:      node(corev1.ConditionUnknown, noSched(corev1.TaintNodeUnreachable), noExec(corev1.TaintNodeUnreachable, t0)),
			noExecute: false, mayAdd: true, want: unreachNS, wantChanged: true},
		{name: "pressure and unschedulable", node: func() *corev1.Node {
			n := node(corev1.ConditionTrue)
			n.Spec.Unschedulable = true
			n.Status.Conditions = append(n.Status.Conditions,
				corev1.NodeCondition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue},
				corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse})
			return n
		}(), noExecute: true, want: corev1.TaintNodeDiskPressure + ":NoSchedule " + corev1.TaintNodeUnschedulable + ":NoSchedule", wantChanged: true},
		{name: "duplicates collapse",
			node:      node(corev1.ConditionUnknown, noSched(corev1.TaintNodeUnreachable), noSched(corev1.TaintNodeUnreachable), noExec(corev1.TaintNodeUnreachable, t0), noExec(corev1.TaintNodeUnreachable, t0)),
			noExecute: true, want: unreachNS + " " + corev1.TaintNodeUnreachable + ":NoExecute@0", wantChanged: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := desiredTaints(tc.node, tc.noExecute, tc.mayAdd, now)
			if got := taintsString(d.taints); got != tc.want {
				t.Errorf("taints = %q, want %q", got, tc.want)
			}
			if d.changed != tc.wantChanged || d.adds != tc.wantAdds || d.heldBack != tc.wantHeld {
				t.Errorf("changed/adds/heldBack = %v/%v/%v, want %v/%v/%v", d.changed, d.adds, d.heldBack, tc.wantChanged, tc.wantAdds, tc.wantHeld)
			}
		})
	}
}

func TestZoneStateOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ready, notReady int
		want            zoneState
	}{
		{ready: 3, notReady: 0, want: zoneNormal},
		{ready: 0, notReady: 1, want: zoneFull},
		{ready: 0, notReady: 0, want: zoneNormal},
		{ready: 1, notReady: 2, want: zoneNormal},  // two unhealthy nodes never make a disruption
		{ready: 2, notReady: 3, want: zonePartial}, // 60% >= 55%
		{ready: 3, notReady: 3, want: zoneNormal},
		{ready: 2, notReady: 4, want: zonePartial},
	}
	for _, tc := range tests {
		if got := zoneStateOf(tc.ready, tc.notReady, 0.55); got != tc.want {
			t.Errorf("zoneStateOf(%d, %d) = %v, want %v", tc.ready, tc.notReady, got, tc.want)
		}
	}
}

func TestComputeZonesAndRates(t *testing.T) {
	t.Parallel()
	n := func(zone string, ready corev1.ConditionStatus) *corev1.Node {
		node := readyNode(ready, t0)
		if zone != "" {
			node.Labels = map[string]string{corev1.LabelTopologyZone: zone}
		}
		return node
	}
	cfg := Config{EvictionRate: 1, SecondaryEvictionRate: 0.5, LargeClusterSize: 4}
	snap := computeZones([]*corev1.Node{
		n("a", corev1.ConditionTrue), n("a", corev1.ConditionUnknown),
		n("b", corev1.ConditionFalse), n("b", ""),
		n("c", corev1.ConditionUnknown), n("c", corev1.ConditionUnknown), n("c", corev1.ConditionUnknown), n("c", corev1.ConditionTrue), n("c", corev1.ConditionUnknown),
	}, 0.55, t0)
	want := map[string]zoneState{zoneOf(n("a", "")): zoneNormal, zoneOf(n("b", "")): zoneFull, zoneOf(n("c", "")): zonePartial}
	for z, s := range want {
		if snap.zones[z].state != s {
			t.Errorf("zone %q = %v, want %v", z, snap.zones[z].state, s)
		}
	}
	if snap.allDisrupted {
		t.Error("allDisrupted with a ready node")
	}
	if r := zoneRate(snap.zones[zoneOf(n("c", ""))], &cfg); r != 0.5 {
		t.Errorf("large partial zone rate = %v, want the secondary rate", r)
	}
	small := zoneInfo{state: zonePartial, size: 4}
	if r := zoneRate(small, &cfg); r != 0 {
		t.Errorf("small partial zone rate = %v, want 0", r)
	}
	if r := zoneRate(snap.zones[zoneOf(n("b", ""))], &cfg); r != 1 {
		t.Errorf("full zone rate = %v, want the normal rate", r)
	}
	if all := computeZones([]*corev1.Node{n("a", corev1.ConditionUnknown), n("b", "")}, 0.55, t0); !all.allDisrupted {
		t.Error("no ready node anywhere must be allDisrupted")
	}
	if none := computeZones(nil, 0.55, t0); none.allDisrupted {
		t.Error("no nodes must not be allDisrupted")
	}
}

func TestBucket(t *testing.T) {
	t.Parallel()
	b := newBucket(0.1, t0)
	steps := []struct {
		at       time.Duration
		wantOK   bool
		wantWait time.Duration
	}{
		{0, true, 0},
		{0, false, 10 * time.Second},
		{4 * time.Second, false, 6 * time.Second},
		{10 * time.Second, true, 0},
		{30 * time.Second, true, 0}, // burst is one: the idle 10s did not pile up
		{30 * time.Second, false, 10 * time.Second},
	}
	for i, s := range steps {
		ok, wait := b.take(t0.Add(s.at))
		if ok != s.wantOK || (wait-s.wantWait).Abs() > time.Millisecond {
			t.Fatalf("step %d: take = %v, %v; want %v, %v", i, ok, wait, s.wantOK, s.wantWait)
		}
	}
	b.setRate(0, t0.Add(31*time.Second))
	if ok, wait := b.take(t0.Add(time.Hour)); ok || wait != 0 {
		t.Fatalf("zero rate: take = %v, %v; want false, 0", ok, wait)
	}
}

func TestTolerates(t *testing.T) {
	t.Parallel()
	taint := corev1.Taint{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute}
	tests := []struct {
		tol  corev1.Toleration
		want bool
	}{
		{corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists}, true},
		{corev1.Toleration{Key: "k", Operator: corev1.TolerationOpEqual, Value: "v", Effect: corev1.TaintEffectNoExecute}, true},
		{corev1.Toleration{Key: "k", Value: "v"}, true}, // empty operator is Equal
		{corev1.Toleration{Key: "k", Value: "w"}, false},
		{corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}, false},
		{corev1.Toleration{Operator: corev1.TolerationOpExists}, true},
		{corev1.Toleration{Key: "other", Operator: corev1.TolerationOpExists}, false},
		{corev1.Toleration{Key: "k", Operator: corev1.TolerationOpGt, Value: "1"}, false},
	}
	for i, tc := range tests {
		if got := tolerates(tc.tol, taint); got != tc.want {
			t.Errorf("%d: tolerates(%+v) = %v, want %v", i, tc.tol, got, tc.want)
		}
	}
}

func TestEvictionPlan(t *testing.T) {
	t.Parallel()
	secs := func(s int64) *int64 { return &s }
	unreach := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: mtime(t0)}
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute, TimeAdded: mtime(t0.Add(10 * time.Second))}
	noTime := corev1.Taint{Key: "example.com/drain", Effect: corev1.TaintEffectNoExecute}
	addedAt := func(t corev1.Taint) time.Time {
		if t.TimeAdded != nil {
			return t.TimeAdded.Time
		}
		return t0.Add(20 * time.Second)
	}
	pod := func(name string, tols ...corev1.Toleration) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Tolerations: tols}}
	}
	tol := func(key string, s *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: s}
	}
	deleting := pod("deleting")
	deleting.DeletionTimestamp = mtime(t0)
	tests := []struct {
		name     string
		pods     []*corev1.Pod
		taints   []corev1.Taint
		now      time.Time
		wantDue  []string
		wantNext time.Time
	}{
		{name: "no taints, nothing", pods: []*corev1.Pod{pod("a")}, now: t0},
		{name: "untolerated goes at once", pods: []*corev1.Pod{pod("a")}, taints: []corev1.Taint{unreach}, now: t0, wantDue: []string{"a"}},
		{name: "tolerated for 300s from the taint", pods: []*corev1.Pod{pod("a", tol(corev1.TaintNodeUnreachable, secs(300)))},
			taints: []corev1.Taint{unreach}, now: t0.Add(100 * time.Second), wantNext: t0.Add(300 * time.Second)},
		{name: "tolerance ran out", pods: []*corev1.Pod{pod("a", tol(corev1.TaintNodeUnreachable, secs(300)))},
			taints: []corev1.Taint{unreach}, now: t0.Add(300 * time.Second), wantDue: []string{"a"}},
		{name: "tolerated forever", pods: []*corev1.Pod{pod("ds", tol(corev1.TaintNodeUnreachable, nil))},
			taints: []corev1.Taint{unreach}, now: t0.Add(time.Hour)},
		{name: "zero seconds goes at once", pods: []*corev1.Pod{pod("a", tol(corev1.TaintNodeUnreachable, secs(0)))},
			taints: []corev1.Taint{unreach}, now: t0, wantDue: []string{"a"}},
		{name: "the earliest taint decides", pods: []*corev1.Pod{pod("a", tol(corev1.TaintNodeUnreachable, secs(300)), tol(corev1.TaintNodeNotReady, secs(20)))},
			taints: []corev1.Taint{unreach, notReady}, now: t0, wantNext: t0.Add(30 * time.Second)},
		{name: "the longest toleration of one taint counts", pods: []*corev1.Pod{pod("a", tol(corev1.TaintNodeUnreachable, secs(5)), tol(corev1.TaintNodeUnreachable, secs(50)))},
			taints: []corev1.Taint{unreach}, now: t0, wantNext: t0.Add(50 * time.Second)},
		{name: "a taint without time counts from when it was seen", pods: []*corev1.Pod{pod("a", tol("example.com/drain", secs(5)))},
			taints: []corev1.Taint{noTime}, now: t0, wantNext: t0.Add(25 * time.Second)},
		{name: "mixed pods, deleting ones skipped",
			pods:   []*corev1.Pod{pod("now"), deleting, pod("later", tol(corev1.TaintNodeUnreachable, secs(60))), pod("sooner", tol(corev1.TaintNodeUnreachable, secs(30)))},
			taints: []corev1.Taint{unreach}, now: t0.Add(time.Second), wantDue: []string{"now"}, wantNext: t0.Add(30 * time.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			due, next := evictionPlan(tc.pods, tc.taints, addedAt, tc.now)
			var names []string
			for _, p := range due {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, tc.wantDue) {
				t.Errorf("due = %v, want %v", names, tc.wantDue)
			}
			if !next.Equal(tc.wantNext) {
				t.Errorf("next = %v, want %v", next, tc.wantNext)
			}
		})
	}
}

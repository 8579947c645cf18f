package daemonset

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestManage(t *testing.T) {
	t.Parallel()
	ds := testDS()
	surging := testDS(withStrategy(intstr.FromInt32(0), intstr.FromInt32(1)))
	type tc struct {
		name       string
		ds         *appsv1.DaemonSet
		nodes      []*corev1.Node
		pods       []*corev1.Pod
		burst      int
		wantCreate []string
		wantDelete []string
		wantFailed []string
	}
	var tests []tc
	{
		tests = append(tests, tc{name: "empty cluster: a pod per node", ds: ds, nodes: nodes(3), wantCreate: []string{"n0", "n1", "n2"}})
	}
	{
		p0 := testPod(ds, "n0", "h")
		tests = append(tests, tc{name: "only the node without a pod", ds: ds, nodes: nodes(2), pods: []*corev1.Pod{p0}, wantCreate: []string{"n1"}})
	}
	{
		p0 := testPod(ds, "n0", "h", unbound)
		tests = append(tests, tc{name: "an unbound pod counts for its node", ds: ds, nodes: nodes(1), pods: []*corev1.Pod{p0}})
	}
	{
		p0 := testPod(ds, "n0", "h", terminating)
		tests = append(tests, tc{name: "a terminating pod holds its node back", ds: ds, nodes: nodes(1), pods: []*corev1.Pod{p0}})
	}
	{
		p0 := testPod(ds, "gone", "h")
		tests = append(tests, tc{name: "the pod of a removed node goes", ds: ds, nodes: nodes(1), pods: []*corev1.Pod{p0}, wantCreate: []string{"n0"}, wantDelete: []string{p0.Name}})
	}
	{
		sel := testDS(withNodeSelector("disk", "ssd"))
		p0, p1 := testPod(sel, "n0", "h"), testPod(sel, "n1", "h")
		ns := []*corev1.Node{testNode("n0", label("disk", "ssd")), testNode("n1", label("disk", "hdd")), testNode("n2", label("disk", "ssd"))}
		tests = append(tests, tc{name: "the pod of a node no longer selected goes", ds: sel, nodes: ns, pods: []*corev1.Pod{p0, p1}, wantCreate: []string{"n2"}, wantDelete: []string{p1.Name}})
	}
	{
		p0 := testPod(ds, "n0", "h")
		ns := []*corev1.Node{testNode("n0", taint("dedicated", corev1.TaintEffectNoSchedule)), testNode("n1", taint("dedicated", corev1.TaintEffectNoSchedule)),
			testNode("n2", taint("dedicated", corev1.TaintEffectNoExecute))}
		p2 := testPod(ds, "n2", "h")
		tests = append(tests, tc{name: "NoSchedule keeps the old pod and makes none; NoExecute evicts", ds: ds, nodes: ns, pods: []*corev1.Pod{p0, p2}, wantDelete: []string{p2.Name}})
	}
	{
		tol := testDS(withTolerations(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists}))
		ns := []*corev1.Node{testNode("n0", taint("dedicated", corev1.TaintEffectNoSchedule)), testNode("n1", taint("other", corev1.TaintEffectNoSchedule))}
		tests = append(tests, tc{name: "a tolerated taint", ds: tol, nodes: ns, wantCreate: []string{"n0"}})
	}
	{
		old, newer := testPod(ds, "n0", "h"), testPod(ds, "n0", "h")
		tests = append(tests, tc{name: "two pods on a node: the oldest stays", ds: ds, nodes: nodes(1), pods: []*corev1.Pod{newer, old}, wantDelete: []string{newer.Name}})
	}
	{
		bound, unb := testPod(ds, "n0", "h"), testPod(ds, "n0", "h", unbound)
		bound.CreationTimestamp.Time = t0.Add(time.Hour)
		tests = append(tests, tc{name: "two pods on a node: the bound one stays", ds: ds, nodes: nodes(1), pods: []*corev1.Pod{unb, bound}, wantDelete: []string{unb.Name}})
	}
	{
		oldRev, newRev, extra := testPod(surging, "n0", "old"), testPod(surging, "n0", "h"), testPod(surging, "n0", "h")
		tests = append(tests, tc{name: "surging: the oldest of each revision stays", ds: surging, nodes: nodes(1), pods: []*corev1.Pod{oldRev, newRev, extra}, wantDelete: []string{extra.Name}})
	}
	{
		failed, done := testPod(ds, "n0", "h", phase(corev1.PodFailed)), testPod(ds, "n1", "h", phase(corev1.PodSucceeded))
		tests = append(tests, tc{name: "failed and finished pods go (and are replaced later)", ds: ds, nodes: nodes(2), pods: []*corev1.Pod{failed, done},
			wantDelete: []string{failed.Name, done.Name}, wantFailed: []string{failed.Name}})
	}
	tests = append(tests, tc{name: "at most burst creations", ds: ds, nodes: nodes(5), burst: 2, wantCreate: []string{"n0", "n1"}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			burst := tt.burst
			if burst == 0 {
				burst = 100
			}
			a := newWorld(tt.ds, tt.nodes, tt.pods, "h", t0).manage(burst)
			wantDelete := slices.Clone(tt.wantDelete)
			slices.Sort(wantDelete)
			if !slices.Equal(a.create, tt.wantCreate) || !slices.Equal(names(a.delete), wantDelete) || !slices.Equal(names(a.failed), tt.wantFailed) {
				t.Errorf("create %v delete %v failed %v; want %v %v %v", a.create, names(a.delete), names(a.failed), tt.wantCreate, wantDelete, tt.wantFailed)
			}
		})
	}
}

// fleet is a pod per node n0..n(len-1); spec gives each node's pod: "old"
// or "new" (revision), with "-" for not ready, "x" for terminating and ""
// for no pod. "old+new" puts both.
func fleet(ds *appsv1.DaemonSet, spec ...string) []*corev1.Pod {
	var out []*corev1.Pod
	for i, s := range spec {
		node := fmt.Sprintf("n%d", i)
		for _, part := range splitPlus(s) {
			var opts []podOpt
			hash := "h"
			switch part[0] {
			case 'o':
				hash = "old"
			}
			switch part[len(part)-1] {
			case '-':
				opts = append(opts, notReady)
			case 'x':
				opts = append(opts, terminating)
			}
			p := testPod(ds, node, hash, opts...)
			p.Name = fmt.Sprintf("%s-%s", node, part)
			out = append(out, p)
		}
	}
	return out
}

func splitPlus(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '+' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

func TestRollingUpdate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		ds         *appsv1.DaemonSet
		pods       []string
		wantCreate []string
		wantDelete []string
	}{
		{"maxUnavailable 1: one old pod at a time", testDS(), []string{"old", "old", "old"}, nil, []string{"n0-old"}},
		{"maxUnavailable 1: none while a new pod is not ready", testDS(), []string{"new-", "old", "old"}, nil, nil},
		{"maxUnavailable 1: none while a node has no pod", testDS(), []string{"", "old", "old"}, nil, nil},
		{"maxUnavailable 1: none while a pod terminates", testDS(), []string{"oldx", "old", "old"}, nil, nil},
		{"maxUnavailable 1: the next once the new pod is ready", testDS(), []string{"new", "old", "old"}, nil, []string{"n1-old"}},
		{"unavailable old pods always go", testDS(), []string{"new-", "old-", "old"}, nil, []string{"n1-old-"}},
		{"maxUnavailable 2", testDS(withStrategy(intstr.FromInt32(2), intstr.FromInt32(0))), []string{"old", "old", "old"}, nil, []string{"n0-old", "n1-old"}},
		{"maxUnavailable 50% of 3 rounds up to 2", testDS(withStrategy(intstr.FromString("50%"), intstr.FromInt32(0))), []string{"old", "old", "old"}, nil, []string{"n0-old", "n1-old"}},
		{"done", testDS(), []string{"new", "new"}, nil, nil},
		{"surge 1: a new pod beside an old", testDS(withStrategy(intstr.FromInt32(0), intstr.FromInt32(1))), []string{"old", "old"}, []string{"n0"}, nil},
		{"surge 1: wait for the surged pod", testDS(withStrategy(intstr.FromInt32(0), intstr.FromInt32(1))), []string{"old+new-", "old"}, nil, nil},
		{"surge 1: old goes once new is available, and the next surges", testDS(withStrategy(intstr.FromInt32(0), intstr.FromInt32(1))), []string{"old+new", "old"}, []string{"n1"}, []string{"n0-old"}},
		{"surge 1: an unavailable old pod is replaced at once", testDS(withStrategy(intstr.FromInt32(0), intstr.FromInt32(1))), []string{"old+new-", "old-", "old"}, []string{"n1"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(tt.ds, nodes(len(tt.pods)), fleet(tt.ds, tt.pods...), "h", t0)
			a := w.rollingUpdate()
			if !slices.Equal(a.create, tt.wantCreate) || !slices.Equal(names(a.delete), tt.wantDelete) {
				t.Errorf("create %v delete %v; want %v %v", a.create, names(a.delete), tt.wantCreate, tt.wantDelete)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	ds := testDS(withNodeSelector("role", "worker"))
	ds.Spec.MinReadySeconds = 10
	ns := []*corev1.Node{testNode("n0", label("role", "worker")), testNode("n1", label("role", "worker")), testNode("n2", label("role", "worker")),
		testNode("n3", label("role", "worker")), testNode("n4")}
	pods := []*corev1.Pod{
		testPod(ds, "n0", "h"), // available, updated
		testPod(ds, "n1", "old", readyAt(t0.Add(6*time.Second))),        // ready 4s of 10: not available yet
		testPod(ds, "n2", "h", notReady),                                // scheduled only
		testPod(ds, "n4", "h"),                                          // misscheduled
		testPod(ds, "n3", "h", terminating, phase(corev1.PodSucceeded)), // stopped while terminating: not counted
	}
	w := newWorld(ds, ns, pods, "h", t0.Add(10*time.Second))
	st, next := w.status()
	want := appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 4, CurrentNumberScheduled: 3, NumberReady: 2, NumberAvailable: 1,
		UpdatedNumberScheduled: 2, NumberMisscheduled: 1, NumberUnavailable: 3}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("status\n got %+v\nwant %+v", st, want)
	}
	if next != 6*time.Second {
		t.Errorf("next sync in %v, want 6s", next)
	}
}

// TestPlanScales: a sync over 500 nodes and their pods stays well under a
// millisecond per node (no nodes × pods scan).
func TestPlanScales(t *testing.T) {
	t.Parallel()
	ds := testDS()
	ns := nodes(500)
	var pods []*corev1.Pod
	for i, n := range ns {
		hash := "old"
		if i%2 == 0 {
			hash = "h"
		}
		pods = append(pods, testPod(ds, n.Name, hash))
	}
	start := time.Now()
	for range 20 {
		w := newWorld(ds, ns, pods, "h", t0)
		if a := w.manage(250); !a.empty() {
			t.Fatalf("manage: %v %v", a.create, names(a.delete))
		}
		if a := w.rollingUpdate(); len(a.delete) != 1 {
			t.Fatalf("rolling update deletes %d", len(a.delete))
		}
		if st, _ := w.status(); st.DesiredNumberScheduled != 500 || st.UpdatedNumberScheduled != 250 {
			t.Fatalf("status %+v", st)
		}
	}
	if d := time.Since(start) / 20; d > 100*time.Millisecond {
		t.Errorf("a 500-node sync plan takes %v", d)
	}
}

package why

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/bus"
	"github.com/kubebus/kubebus/bus/lifecycle"
	"github.com/kubebus/kubebus/bus/tap"
)

var base = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// history builds records for a World: each object state at a revision and
// a time offset, written by a manager.
type history struct {
	recs []tap.Record
}

func (h *history) add(typ bus.EventType, rev int64, at time.Duration, who string, group, resource string, obj metav1.Object) {
	m := obj.(interface {
		GetManagedFields() []metav1.ManagedFieldsEntry
		SetManagedFields([]metav1.ManagedFieldsEntry)
	})
	ts := metav1.NewTime(base.Add(at))
	m.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: who, Time: &ts}})
	raw, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	h.recs = append(h.recs, tap.Record{Seq: uint64(rev), Time: base.Add(at), Event: &bus.Event{Type: typ, Revision: rev,
		Group: group, Resource: resource, Namespace: obj.GetNamespace(), Name: obj.GetName(), Object: raw}})
}

func (h *history) world() *World {
	w := NewWorld()
	w.Add(h.recs)
	return w
}

func ctrlRef(kind, name string, uid types.UID) []metav1.OwnerReference {
	t := true
	api := "apps/v1"
	return []metav1.OwnerReference{{APIVersion: api, Kind: kind, Name: name, UID: uid, Controller: &t}}
}

func cond(t corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
	return corev1.PodCondition{Type: t, Status: s}
}

// healthyDeployment is a Deployment whose one pod went every step.
func healthyDeployment() *history {
	h := &history{}
	one := int32(1)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "d1"},
		Spec: appsv1.DeploymentSpec{Replicas: &one}}
	h.add(bus.Added, 10, 0, "kubectl-create", "apps", "deployments", d.DeepCopy())
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns", UID: "rs1", OwnerReferences: ctrlRef("Deployment", "web", "d1"),
		Annotations: map[string]string{"deployment.kubernetes.io/revision": "1"}}, Spec: appsv1.ReplicaSetSpec{Replicas: &one}}
	h.add(bus.Added, 11, 20*time.Millisecond, "kube-controller-manager", "apps", "replicasets", rs)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1-a", Namespace: "ns", UID: "p1", Labels: map[string]string{"app": "web"},
		OwnerReferences: ctrlRef("ReplicaSet", "web-1", "rs1")}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	h.add(bus.Added, 12, 30*time.Millisecond, "kube-controller-manager", "", "pods", p.DeepCopy())
	p.Spec.NodeName = "n1"
	h.add(bus.Modified, 13, 40*time.Millisecond, "kube-scheduler", "", "pods", p.DeepCopy())
	p.Status.PodIP = "10.0.0.5"
	h.add(bus.Modified, 14, 300*time.Millisecond, "kubelet", "", "pods", p.DeepCopy())
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	h.add(bus.Modified, 15, 900*time.Millisecond, "kubelet", "", "pods", p.DeepCopy())
	p.Status.Conditions = []corev1.PodCondition{cond(corev1.PodReady, corev1.ConditionTrue)}
	p.Status.ContainerStatuses[0].Ready = true
	h.add(bus.Modified, 16, 1200*time.Millisecond, "kubelet", "", "pods", p.DeepCopy())
	d.Status = appsv1.DeploymentStatus{ReadyReplicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1, Replicas: 1}
	h.add(bus.Modified, 17, 1210*time.Millisecond, "kube-controller-manager", "apps", "deployments", d.DeepCopy())
	yes := true
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-x", Namespace: "ns", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.5"}, Conditions: discoveryv1.EndpointConditions{Ready: &yes},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "web-1-a"}}}}
	h.add(bus.Modified, 18, 1250*time.Millisecond, "kube-controller-manager", "discovery.k8s.io", "endpointslices", s)
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: lifecycle.ProxyLeaseName("n1"), Namespace: lifecycle.ProxyLeaseNamespace}}
	lifecycle.SetProgrammed(l, 17, base.Add(1240*time.Millisecond))
	h.add(bus.Modified, 19, 1300*time.Millisecond, "kube-proxy", "coordination.k8s.io", "leases", l.DeepCopy())
	lifecycle.SetProgrammed(l, 18, base.Add(1400*time.Millisecond))
	h.add(bus.Modified, 20, 2*time.Second, "kube-proxy", "coordination.k8s.io", "leases", l.DeepCopy())
	return h
}

func TestExplainHealthyDeployment(t *testing.T) {
	w := healthyDeployment().world()
	r := Explain(w, Target{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "web"}, nil)
	var stages []string
	var sum time.Duration
	for _, l := range r.Chain {
		stages = append(stages, l.Stage)
		sum += l.Took
	}
	if got := strings.Join(stages, ","); got != "owner,owner,created,scheduled,sandbox,started,ready,endpoints,programmed" {
		t.Fatalf("stages %s", got)
	}
	if len(r.Stops) != 0 {
		t.Fatalf("findings on a healthy Deployment: %+v", r.Stops)
	}
	// The proxy's step is the first Lease revision programmed at or after
	// the slice's revision, at the time the proxy programmed it.
	last := r.Chain[len(r.Chain)-1]
	if last.Revision != 20 || !last.Time.Equal(base.Add(1400*time.Millisecond)) || last.Who != "kube-proxy" {
		t.Fatalf("programmed step %+v", last)
	}
	if sum != 1400*time.Millisecond {
		t.Fatalf("durations add up to %v", sum)
	}
	if r.Chain[r.Slowest].Stage != "started" || r.Chain[r.Slowest].Took != 600*time.Millisecond {
		t.Fatalf("slowest %+v", r.Chain[r.Slowest])
	}
	if r.Chain[3].Who != "kube-scheduler" || r.Chain[3].Step != "pod web-1-a bound to node n1" {
		t.Fatalf("scheduled step %+v", r.Chain[3])
	}
	var b strings.Builder
	if err := Render(&b, r, time.UTC); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Deployment ns/web: 1/1 ready", "* slowest step: containers started (600ms)", "total: 1.40s from owner to programmed", "nothing is holding it up"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}

	// As it was before the pod was bound: the chain stops at created and
	// the pod is the finding.
	then := Explain(w.Until(12), Target{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "web"}, nil)
	if len(then.Chain) != 3 || then.Revision != 12 || len(then.Stops) == 0 || then.Stops[0].Cause != "Unschedulable" {
		t.Fatalf("--at 12: chain %+v stops %+v", then.Chain, then.Stops)
	}
	if rev := w.RevisionAt(base.Add(35 * time.Millisecond)); rev != 12 {
		t.Fatalf("RevisionAt = %d", rev)
	}
}

func TestExplainPodFindings(t *testing.T) {
	pod := func(mut func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "img:1"}}}}
		mut(p)
		return p
	}
	unready := pod(func(p *corev1.Pod) {
		p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"check"}}}, PeriodSeconds: 2}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	})
	cases := []struct {
		name  string
		pod   *corev1.Pod
		event *corev1.Event
		cause string
		want  []string
	}{
		{"image", pod(func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "not found"}}}}
		}), nil, "ImagePull", []string{`image "img:1" cannot be pulled (ImagePullBackOff)`, "not found"}},
		{"crash", pod(func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: 4,
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}}}
		}), nil, "CrashLoopBackOff", []string{"exits with code 2 (Error); restarted 4 times", "| line from previous run"}},
		{"readiness, evidence from a deleted event", unready,
			&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "ns"}, Reason: "Unhealthy", Message: "Readiness probe failed: nope", Count: 3,
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", UID: "u"}},
			"ReadinessFailing", []string{"probe: exec check every 2s, timeout 1s, failure threshold 3", "last probe result: Unhealthy: Readiness probe failed: nope (x3)"}},
		{"stuck terminating", pod(func(p *corev1.Pod) {
			now := metav1.NewTime(base)
			p.DeletionTimestamp, p.Finalizers = &now, []string{"example.com/x"}
		}), nil, "StuckTerminating", []string{"waits for finalizer(s) example.com/x", "added at revision 1 by tester"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &history{}
			h.add(bus.Added, 1, 0, "tester", "", "pods", c.pod)
			if c.event != nil {
				h.add(bus.Added, 2, time.Second, "kubelet", "", "events", c.event)
				h.add(bus.Deleted, 3, 2*time.Second, "kubelet", "", "events", c.event)
			}
			logs := func(ns, pod, container string, previous bool) (string, error) {
				if !previous {
					t.Error("logs of the current run asked for a crash loop")
				}
				return "line from previous run\n", nil
			}
			r := Explain(h.world(), Target{Resource: "pods", Namespace: "ns", Name: "p"}, logs)
			if len(r.Stops) == 0 || r.Stops[0].Cause != c.cause {
				t.Fatalf("stops %+v, want %s", r.Stops, c.cause)
			}
			text := r.Stops[0].Message + "\n" + strings.Join(r.Stops[0].Evidence, "\n")
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("lacks %q:\n%s", w, text)
				}
			}
		})
	}
}

func TestExplainUnschedulableClosestNode(t *testing.T) {
	h := &history{}
	node := func(name, cpu string, taint bool) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse("110")}}}
		if taint {
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
		}
		return n
	}
	h.add(bus.Added, 1, 0, "kubelet", "", "nodes", node("small", "2", false))
	h.add(bus.Added, 2, 0, "kubelet", "", "nodes", node("big", "8", false))
	h.add(bus.Added, 3, 0, "kubelet", "", "nodes", node("tainted", "64", true))
	busy := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "busy", Namespace: "other"}, Spec: corev1.PodSpec{NodeName: "big",
		Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}}}}}
	h.add(bus.Added, 4, 0, "kube-scheduler", "", "pods", busy)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("6")}}}}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
			Message: "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: db}, 2 Insufficient cpu. preemption: not helpful."}}}}
	h.add(bus.Added, 5, 0, "tester", "", "pods", p)
	r := Explain(h.world(), Target{Resource: "pods", Namespace: "ns", Name: "p"}, nil)
	if len(r.Stops) != 1 || r.Stops[0].Cause != "Unschedulable" {
		t.Fatalf("stops %+v", r.Stops)
	}
	ev := strings.Join(r.Stops[0].Evidence, "\n")
	// big has 5 free of 8 (short 1 of 6); small is short 4; tainted fits
	// the cpu but not the taint (one failing check each, the smaller
	// shortfall wins among the resource ones, a taint counts as one).
	for _, want := range []string{"1 node(s): node(s) had untolerated taint {dedicated: db}", "2 node(s): Insufficient cpu",
		"closest node: big (short of 1 cpu (requests 6, 5 free))"} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence lacks %q:\n%s", want, ev)
		}
	}
}

func TestExplainServiceSelectorNearMiss(t *testing.T) {
	h := &history{}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "wbe"}}}
	h.add(bus.Added, 1, 0, "kubectl", "", "services", svc)
	for i, l := range []string{"web", "web", "database", "zzz"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p" + string(rune('a'+i)), Namespace: "ns", Labels: map[string]string{"app": l}}}
		h.add(bus.Added, int64(2+i), 0, "kubectl", "", "pods", p)
	}
	r := Explain(h.world(), Target{Resource: "services", Namespace: "ns", Name: "web"}, nil)
	if len(r.Stops) != 1 || r.Stops[0].Cause != "SelectorMatchesNothing" {
		t.Fatalf("stops %+v", r.Stops)
	}
	if ev := r.Stops[0].Evidence; len(ev) != 3 || ev[0] != "2 pod(s) have app=web (e.g. pa)" {
		t.Fatalf("evidence %q", ev)
	}
}

func TestExplainNotFoundAndDeleted(t *testing.T) {
	r := Explain(NewWorld(), Target{Resource: "pods", Namespace: "ns", Name: "gone"}, nil)
	if r.Found || len(r.Stops) != 1 || r.Stops[0].Cause != "NotFound" {
		t.Fatalf("%+v", r)
	}
	h := &history{}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	h.add(bus.Added, 1, 0, "kubectl", "", "configmaps", cm)
	h.add(bus.Deleted, 2, time.Second, "kubectl", "", "configmaps", cm)
	r = Explain(h.world(), Target{Resource: "configmaps", Namespace: "ns", Name: "c"}, nil)
	if !r.Found || len(r.Stops) != 1 || r.Stops[0].Cause != "Deleted" || !strings.Contains(r.Stops[0].Message, "revision 2") {
		t.Fatalf("%+v", r.Stops)
	}
}

func TestWorldAddDedupesAndGaps(t *testing.T) {
	h := healthyDeployment()
	w := NewWorld()
	w.Add(h.recs)
	w.Add(h.recs[:5]) // a second query returning some of the same revisions
	w.Add([]tap.Record{{Event: &bus.Event{Type: bus.Gap, From: 3, To: 4}}, {Event: &bus.Event{Type: bus.Gap, From: 3, To: 4}}})
	if got := len(w.Get(bus.ObjectKey{Resource: "pods", Namespace: "ns", Name: "web-1-a"}).Revs); got != 5 {
		t.Fatalf("pod revisions %d", got)
	}
	if len(w.Gaps) != 1 || w.Revision != 20 {
		t.Fatalf("gaps %v revision %d", w.Gaps, w.Revision)
	}
	r := Explain(w, Target{Resource: "pods", Namespace: "ns", Name: "web-1-a"}, nil)
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "3..4") {
		t.Fatalf("notes %v", r.Notes)
	}
}

func TestParseTarget(t *testing.T) {
	cases := map[string]Target{
		"deploy/web":      {Group: "apps", Resource: "deployments", Namespace: "ns", Name: "web"},
		"pod/p":           {Resource: "pods", Namespace: "ns", Name: "p"},
		"svc/s":           {Resource: "services", Namespace: "ns", Name: "s"},
		"ns/team":         {Resource: "namespaces", Name: "team"},
		"nodes/n1":        {Resource: "nodes", Name: "n1"},
		"cronjob.batch/x": {Group: "batch", Resource: "cronjob", Namespace: "ns", Name: "x"},
	}
	for in, want := range cases {
		got, err := ParseTarget(in, "ns")
		if err != nil || got != want {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"web", "pod/", "/web", "pod/a/b"} {
		if _, err := ParseTarget(bad, "ns"); err == nil {
			t.Errorf("ParseTarget(%q) accepted", bad)
		}
	}
	if got, _ := ParseTarget("pod/p", ""); got.Namespace != "default" {
		t.Errorf("no namespace: %q", got.Namespace)
	}
}

func TestRemainingResources(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Status: corev1.NamespaceStatus{Conditions: []corev1.NamespaceCondition{
		{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue, Message: "Some resources are remaining: configmaps has 1 resource instances, deployments.apps has 2 resource instances"}}}}
	h := &history{}
	h.add(bus.Added, 1, 0, "x", "", "namespaces", ns)
	got := remainingResources(h.world().Get(bus.ObjectKey{Resource: "namespaces", Name: "x"}))
	if len(got) != 2 || got[0] != [2]string{"", "configmaps"} || got[1] != [2]string{"apps", "deployments"} {
		t.Fatalf("%v", got)
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{500 * time.Microsecond: "500µs", 12 * time.Millisecond: "12ms",
		1250 * time.Millisecond: "1.25s", 123 * time.Second: "2m3s", -2 * time.Millisecond: "-2ms"} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

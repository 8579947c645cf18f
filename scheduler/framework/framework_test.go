package framework_test

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
)

type res = map[string]string

func names(list []*framework.NodeInfo) string {
	var out []string
	for _, ni := range list {
		out = append(out, ni.Name())
	}
	return strings.Join(out, ",")
}

func TestPodRequests(t *testing.T) {
	t.Parallel()
	withOverhead := ft.MakePod("p").Req(res{"cpu": "1"}).Obj()
	withOverhead.Spec.Overhead = ft.List(res{"cpu": "250m", "memory": "10Mi"})
	podLevel := ft.MakePod("p").Req(res{"cpu": "1", "memory": "1Gi"}).Obj()
	podLevel.Spec.Resources = &v1.ResourceRequirements{Requests: ft.List(res{"cpu": "3"})}
	tests := []struct {
		name            string
		pod             *v1.Pod
		cpu, mem        int64
		nonZeroCPU, nzM int64
	}{
		{"no requests", ft.MakePod("p").Obj(), 0, 0, 100, 200 << 20},
		{"explicit zero is not defaulted", ft.MakePod("p").Req(res{"cpu": "0", "memory": "0"}).Obj(), 0, 0, 0, 0},
		{"containers add up", ft.MakePod("p").Req(res{"cpu": "1"}).Container("x", res{"cpu": "500m", "memory": "1Mi"}).Obj(),
			1500, 1 << 20, 1500, 200<<20 + 1<<20},
		{"init container max", ft.MakePod("p").Req(res{"cpu": "1"}).InitReq(res{"cpu": "2"}).InitReq(res{"cpu": "3"}).Obj(), 3000, 0, 3000, 200 << 20},
		{"sidecars add to containers and later init containers",
			ft.MakePod("p").Req(res{"cpu": "1"}).SidecarReq(res{"cpu": "1"}).InitReq(res{"cpu": "2"}).Obj(), 3000, 0, 3000, 400 << 20},
		{"init container before the sidecar does not add it",
			ft.MakePod("p").Req(res{"cpu": "1"}).InitReq(res{"cpu": "2"}).SidecarReq(res{"cpu": "1"}).Obj(), 2000, 0, 2000, 400 << 20},
		{"overhead", withOverhead, 1250, 10 << 20, 1250, 210 << 20},
		{"pod-level requests win", podLevel, 3000, 1 << 30, 3000, 1 << 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := framework.PodRequests(tt.pod, false)
			nz := framework.PodRequests(tt.pod, true)
			if r.MilliCPU != tt.cpu || r.Memory != tt.mem || nz.MilliCPU != tt.nonZeroCPU || nz.Memory != tt.nzM {
				t.Fatalf("requests %d/%d non-zero %d/%d; want %d/%d %d/%d", r.MilliCPU, r.Memory, nz.MilliCPU, nz.Memory, tt.cpu, tt.mem, tt.nonZeroCPU, tt.nzM)
			}
		})
	}
	ext := framework.PodRequests(ft.MakePod("p").Req(res{"example.com/gpu": "2", "hugepages-2Mi": "4Mi", "requests.x/y": "1"}).Obj(), false)
	if ext.ScalarResources["example.com/gpu"] != 2 || ext.ScalarResources["hugepages-2Mi"] != 4<<20 || len(ext.ScalarResources) != 2 {
		t.Fatalf("scalar resources %v", ext.ScalarResources)
	}
}

func TestNodeInfoAccounting(t *testing.T) {
	t.Parallel()
	ni := framework.NewNodeInfo(ft.MakeNode("n").Obj())
	a := ft.MakePod("a").Req(res{"cpu": "1", "example.com/gpu": "1"}).HostPort("", v1.ProtocolTCP, 80).Obj()
	b := ft.MakePod("b").PodAntiAffinity(ft.Term(v1.LabelHostname, res{"x": "y"})).Obj()
	ni.AddPod(a)
	ni.AddPod(b)
	if ni.Requested.MilliCPU != 1000 || ni.NonZeroRequested.MilliCPU != 1100 || ni.Requested.ScalarResources["example.com/gpu"] != 1 {
		t.Fatalf("requested %+v non-zero %+v", ni.Requested, ni.NonZeroRequested)
	}
	if len(ni.PodsWithAffinity) != 1 || len(ni.PodsWithRequiredAntiAffinity) != 1 || !ni.UsedPorts.CheckConflict("", "TCP", 80) {
		t.Fatal("affinity lists or ports not tracked")
	}
	c := ni.Clone()
	if err := c.RemovePod(a); err != nil {
		t.Fatal(err)
	}
	if ni.Requested.MilliCPU != 1000 || len(ni.Pods) != 2 || !ni.UsedPorts.CheckConflict("", "TCP", 80) {
		t.Fatal("clone shares state with the original")
	}
	if c.Requested.MilliCPU != 0 || c.UsedPorts.CheckConflict("", "TCP", 80) || len(c.Pods) != 1 {
		t.Fatalf("clone after removal: %+v", c.Requested)
	}
	if err := c.RemovePod(a); err == nil {
		t.Fatal("removing a missing pod succeeded")
	}
	_ = c.RemovePod(b)
	if len(c.PodsWithAffinity)+len(c.PodsWithRequiredAntiAffinity) != 0 || !c.Requested.IsZero() {
		t.Fatal("lists not emptied")
	}
}

func TestHostPorts(t *testing.T) {
	t.Parallel()
	h := framework.HostPortInfo{}
	h.Add("", "", 80)
	h.Add("10.0.0.1", "UDP", 53)
	h.Add("10.0.0.1", "UDP", 53)
	for _, tt := range []struct {
		ip, proto string
		port      int32
		want      bool
	}{
		{"10.0.0.2", "TCP", 80, true},
		{"0.0.0.0", "UDP", 53, true},
		{"10.0.0.2", "UDP", 53, false},
		{"", "TCP", 81, false},
		{"", "TCP", 0, false},
	} {
		if got := h.CheckConflict(tt.ip, tt.proto, tt.port); got != tt.want {
			t.Errorf("%s %s %d: %v", tt.ip, tt.proto, tt.port, got)
		}
	}
	h.Remove("10.0.0.1", "UDP", 53)
	if !h.CheckConflict("10.0.0.1", "UDP", 53) {
		t.Fatal("port released while still in use by another pod")
	}
	h.Remove("10.0.0.1", "UDP", 53)
	if h.CheckConflict("10.0.0.1", "UDP", 53) || h.Len() != 1 {
		t.Fatal("port not released")
	}
}

func TestSnapshot(t *testing.T) {
	t.Parallel()
	zone := func(n, z string) *v1.Node { return ft.MakeNode(n).Label(v1.LabelTopologyZone, z).Obj() }
	nodes := []*v1.Node{zone("a1", "a"), zone("a2", "a"), zone("a3", "a"), zone("b1", "b"), zone("c1", "c"), zone("c2", "c"), ft.MakeNode("nozone").Obj()}
	running := ft.MakePod("r").Node("a1").Req(res{"cpu": "1"}).Obj()
	done := ft.MakePod("d").Node("a1").Req(res{"cpu": "1"}).Obj()
	done.Status.Phase = v1.PodSucceeded
	pending := ft.MakePod("p").Req(res{"cpu": "1"}).Obj()
	orphan := ft.MakePod("o").Node("gone").Obj()
	s := framework.NewSnapshot(nodes, []*v1.Pod{running, done, pending, orphan}, nil)

	if got := names(s.NodeInfos()); got != "nozone,a1,b1,c1,a2,c2,a3" {
		t.Fatalf("order %s", got)
	}
	if s.Get("a1").Requested.MilliCPU != 1000 || len(s.Get("a1").Pods) != 1 {
		t.Fatal("terminated pod counted")
	}
	if s.Get("gone") != nil || s.NumNodes() != 7 {
		t.Fatal("pod on an unknown node made a node")
	}
	// The node arrives after its pod.
	s.AddNode(ft.MakeNode("gone").Obj())
	if g := s.Get("gone"); g == nil || len(g.Pods) != 1 || s.NumNodes() != 8 {
		t.Fatal("pod not attached to the late node")
	}
	// Updating a pod replaces it; moving it to Failed removes it.
	bigger := running.DeepCopy()
	bigger.Spec.Containers[0].Resources.Requests = ft.List(res{"cpu": "3"})
	s.UpdatePod(bigger)
	if s.Get("a1").Requested.MilliCPU != 3000 || len(s.Get("a1").Pods) != 1 {
		t.Fatal("update not applied")
	}
	failed := bigger.DeepCopy()
	failed.Status.Phase = v1.PodFailed
	s.UpdatePod(failed)
	if len(s.Get("a1").Pods) != 0 {
		t.Fatal("failed pod kept")
	}
	// A pending copy of an assumed pod does not undo the assumption.
	assumed := ft.MakePod("assumed").Node("b1").Req(res{"cpu": "1"}).Obj()
	s.AddPod(assumed)
	s.UpdatePod(ft.MakePod("assumed").Req(res{"cpu": "1"}).Obj())
	if n, ok := s.NodeNameOf(assumed); !ok || n != "b1" || s.Get("b1").Requested.MilliCPU != 1000 {
		t.Fatal("assumed pod lost")
	}
	s.RemovePod(assumed)
	// Removing a node with pods keeps them until they go.
	s.AddPod(ft.MakePod("x").Node("c2").Obj())
	s.RemoveNode("c2")
	if s.Get("c2") != nil || strings.Contains(names(s.NodeInfos()), "c2") {
		t.Fatal("removed node still listed")
	}
	if n, ok := s.NodeNameOf(ft.MakePod("x").Obj()); !ok || n != "c2" {
		t.Fatal("pod of removed node forgotten")
	}
	// Affinity lists follow pods.
	if len(s.HavePodsWithAffinity()) != 0 {
		t.Fatal("affinity list not empty")
	}
	aff := ft.MakePod("aff").Node("b1").PodAffinity(ft.Term(v1.LabelHostname, res{"a": "b"})).Obj()
	s.AddPod(aff)
	if names(s.HavePodsWithAffinity()) != "b1" || len(s.HavePodsWithRequiredAntiAffinity()) != 0 {
		t.Fatal("affinity list not updated")
	}
	s.RemovePod(aff)
	if len(s.HavePodsWithAffinity()) != 0 {
		t.Fatal("affinity list not updated on removal")
	}
	// Assigning a nominated pod drops its nomination.
	nom := ft.MakePod("nom").Obj()
	s.AddNominatedPod(nom, "b1")
	if len(s.NominatedPods("b1")) != 1 {
		t.Fatal("nomination not recorded")
	}
	s.AddPod(ft.MakePod("nom").Node("b1").Obj())
	if len(s.NominatedPods("b1")) != 0 {
		t.Fatal("nomination kept after binding")
	}
}

func TestSnapshotImagesAndNamespaces(t *testing.T) {
	t.Parallel()
	s := framework.NewSnapshot([]*v1.Node{
		ft.MakeNode("a").Image(10, "nginx:1", "docker.io/library/nginx@sha256:x").Obj(),
		ft.MakeNode("b").Image(10, "docker.io/library/nginx:1").Obj(),
	}, nil, []*v1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: res{"team": "a"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "y", Labels: res{"team": "b"}}},
	})
	if s.ImageNumNodes("docker.io/library/nginx:1") != 2 || s.ImageNumNodes("docker.io/library/nginx@sha256:x") != 1 {
		t.Fatal("image counts")
	}
	s.RemoveNode("a")
	if s.ImageNumNodes("docker.io/library/nginx:1") != 1 {
		t.Fatal("image count after node removal")
	}
	if got := s.NamespacesMatching(labels.SelectorFromSet(res{"team": "b"})); len(got) != 1 || got[0] != "y" {
		t.Fatalf("namespaces %v", got)
	}
	s.SetWorkloadSelector("x", "Service/web", labels.SelectorFromSet(res{"app": "web"}))
	s.SetWorkloadSelector("x", "ReplicaSet/web-1", labels.SelectorFromSet(res{"app": "web", "hash": "1"}))
	s.SetWorkloadSelector("x", "Service/other", labels.SelectorFromSet(res{"app": "other"}))
	sel := s.DefaultSpreadSelector(ft.MakePod("p").Namespace("x").Label("app", "web").Label("hash", "1").Obj())
	if sel.String() != "app=web,hash=1" {
		t.Fatalf("default selector %q", sel.String())
	}
	if !s.DefaultSpreadSelector(ft.MakePod("p").Namespace("y").Label("app", "web").Obj()).Empty() {
		t.Fatal("selector from another namespace")
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	var nilStatus *framework.Status
	if !nilStatus.IsSuccess() || nilStatus.Code() != framework.Success || nilStatus.Err() != nil {
		t.Fatal("nil status is not success")
	}
	s := framework.NewStatus(framework.Unschedulable, "a", "b").WithPlugin("P")
	if !s.IsRejected() || s.Message() != "a, b" || s.Plugin() != "P" || s.String() != "Unschedulable (P): a, b" {
		t.Fatalf("status %v", s)
	}
	boom := errors.New("boom")
	if e := framework.AsStatus(boom); e.Code() != framework.Error || !errors.Is(e.Err(), boom) || e.IsRejected() {
		t.Fatal("error status")
	}
	if framework.AsStatus(nil) != nil {
		t.Fatal("AsStatus(nil)")
	}
}

func TestFitErrorMessage(t *testing.T) {
	t.Parallel()
	fe := &framework.FitError{NumAllNodes: 5, Diagnosis: framework.Diagnosis{
		NodeToStatus: map[string]*framework.Status{
			"a": framework.NewStatus(framework.Unschedulable, "Insufficient cpu", "Insufficient memory"),
			"b": framework.NewStatus(framework.Unschedulable, "Insufficient cpu"),
			"c": framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) had untolerated taint {k: v}"),
		},
		AbsentNodesStatus: framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) [NodeAffinity]"),
		PostFilterMsg:     "preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.",
	}}
	want := "0/5 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint {k: v}, 2 Insufficient cpu, " +
		"2 node(s) didn't satisfy plugin(s) [NodeAffinity]. preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling."
	if got := fe.Error(); got != want {
		t.Fatalf("\n got %q\nwant %q", got, want)
	}
	fe.Diagnosis.PreFilterMsg = "pod affinity terms conflict"
	fe.Diagnosis.PostFilterMsg = ""
	if got := fe.Error(); got != "0/5 nodes are available: pod affinity terms conflict." {
		t.Fatalf("%q", got)
	}
}

func TestNormalizeImageName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"nginx":                           "docker.io/library/nginx:latest",
		"nginx:1.25":                      "docker.io/library/nginx:1.25",
		"library/nginx":                   "docker.io/library/nginx:latest",
		"docker.io/nginx":                 "docker.io/library/nginx:latest",
		"index.docker.io/library/nginx:1": "docker.io/library/nginx:1",
		"user/app:v1":                     "docker.io/user/app:v1",
		"registry.k8s.io/pause:3.10":      "registry.k8s.io/pause:3.10",
		"localhost:5000/app":              "localhost:5000/app:latest",
		"localhost/app":                   "localhost/app:latest",
		"nginx@sha256:abc":                "docker.io/library/nginx@sha256:abc",
		"quay.io/org/app@sha256:0123":     "quay.io/org/app@sha256:0123",
	} {
		if got := framework.NormalizeImageName(in); got != want {
			t.Errorf("NormalizeImageName(%q) = %q, want %q", in, got, want)
		}
	}
}

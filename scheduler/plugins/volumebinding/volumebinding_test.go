package volumebinding

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/storage/volume"

	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
)

func class(name string, mode storagev1.VolumeBindingMode, provisioner string) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
}

func claim(name, className string) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), ResourceVersion: "1"}}
	if className != "-" {
		c.Spec.StorageClassName = &className
	}
	return c
}

func bound(c *v1.PersistentVolumeClaim, pv string) *v1.PersistentVolumeClaim {
	c.Spec.VolumeName = pv
	c.Status.Phase = v1.ClaimBound
	return c
}

func annotate(c *v1.PersistentVolumeClaim, k, v string) *v1.PersistentVolumeClaim {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[k] = v
	return c
}

// localPV is a volume pinned to the nodes with kubernetes.io/hostname in hosts.
func localPV(name string, hosts ...string) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if len(hosts) > 0 {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: hosts}},
		}}}}
	}
	return pv
}

func withClaims(p *ft.PodWrapper, names ...string) *v1.Pod {
	pod := p.Obj()
	for _, n := range names {
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: "v-" + n, VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: n}}})
	}
	return pod
}

func TestFilter(t *testing.T) {
	t.Parallel()
	wffc := class("local-path", storagev1.VolumeBindingWaitForFirstConsumer, "kubebus.io/local-path")
	immediate := class("fast", storagev1.VolumeBindingImmediate, "example.com/fast")
	manual := class("manual", storagev1.VolumeBindingWaitForFirstConsumer, NotSupportedProvisioner)
	zoned := class("zoned", storagev1.VolumeBindingWaitForFirstConsumer, "kubebus.io/local-path")
	zoned.AllowedTopologies = []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: "zone", Values: []string{"a"}}}}}
	deleting := claim("gone", "local-path")
	deleting.DeletionTimestamp = &metav1.Time{}
	lost := claim("lost", "local-path")
	lost.Spec.VolumeName = "pv-x"
	lost.Status.Phase = v1.ClaimLost
	completed := annotate(claim("completed", "-"), volume.AnnBindCompleted, "yes")
	completed.Spec.VolumeName = "pv-b"

	claims := []*v1.PersistentVolumeClaim{
		bound(claim("on-b", "-"), "pv-b"), bound(claim("anywhere", "-"), "pv-any"), bound(claim("dangling", "-"), "pv-missing"),
		claim("wffc", "local-path"), annotate(claim("wffc-b", "local-path"), volume.AnnSelectedNode, "b"),
		claim("imm", "fast"), claim("noclass", "-"), claim("unknown-class", "nope"),
		bound(claim("prebound", "local-path"), "pv-b"), claim("manual", "manual"), claim("zoned", "zoned"),
		deleting, lost, completed,
	}
	claims[8].Status.Phase = v1.ClaimPending // volumeName set, not yet bound
	snap := ft.Snapshot([]*v1.Node{ft.MakeNode("a").Label("kubernetes.io/hostname", "a").Label("zone", "a").Obj(),
		ft.MakeNode("b").Label("kubernetes.io/hostname", "b").Obj()})
	for _, c := range claims {
		snap.SetClaim(c)
	}
	static := localPV("static-a", "a")
	static.Spec.StorageClassName = "local-static"
	static.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}
	static.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	static.Status.Phase = v1.VolumeAvailable
	taken := static.DeepCopy()
	taken.Name, taken.Spec.ClaimRef = "taken-b", &v1.ObjectReference{Namespace: "default", Name: "someone", UID: "x"}
	taken.Spec.NodeAffinity = localPV("", "b").Spec.NodeAffinity
	for _, name := range []string{"static", "static2"} {
		c := claim(name, "local-static")
		c.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
		c.Spec.Resources.Requests = v1.ResourceList{v1.ResourceStorage: resource.MustParse("64Mi")}
		snap.SetClaim(c)
	}
	snap.SetStorageClass(class("local-static", storagev1.VolumeBindingWaitForFirstConsumer, NotSupportedProvisioner))
	for _, pv := range []*v1.PersistentVolume{localPV("pv-b", "b"), localPV("pv-any"), static, taken} {
		snap.SetVolume(pv)
	}
	for _, sc := range []*storagev1.StorageClass{wffc, immediate, manual, zoned} {
		snap.SetStorageClass(sc)
	}

	tests := []struct {
		name   string
		claims []string
		want   map[string]string // node -> reasons ("" fits)
	}{
		{"no claims", nil, map[string]string{"a": "", "b": ""}},
		{"missing claim", []string{"nope"}, map[string]string{"a": `persistentvolumeclaim "nope" not found`, "b": `persistentvolumeclaim "nope" not found`}},
		{"claim being deleted", []string{"gone"}, map[string]string{"a": `persistentvolumeclaim "gone" is being deleted`, "b": `persistentvolumeclaim "gone" is being deleted`}},
		{"claim lost", []string{"lost"}, map[string]string{"a": `persistentvolumeclaim "lost" bound to non-existent persistentvolume "pv-x"`, "b": `persistentvolumeclaim "lost" bound to non-existent persistentvolume "pv-x"`}},
		{"bound local volume pins the node", []string{"on-b"}, map[string]string{"a": ErrReasonNodeConflict, "b": ""}},
		{"bind-completed annotation counts as bound", []string{"completed"}, map[string]string{"a": ErrReasonNodeConflict, "b": ""}},
		{"bound volume without affinity", []string{"anywhere"}, map[string]string{"a": "", "b": ""}},
		{"bound to a missing volume", []string{"dangling"}, map[string]string{"a": ErrReasonPVNotExist, "b": ErrReasonPVNotExist}},
		{"unbound wait-for-first-consumer fits anywhere", []string{"wffc"}, map[string]string{"a": "", "b": ""}},
		{"selected node already chosen", []string{"wffc-b"}, map[string]string{"a": ErrReasonBindConflict, "b": ""}},
		{"unbound immediate", []string{"imm"}, map[string]string{"a": ErrReasonUnboundImmediate, "b": ErrReasonUnboundImmediate}},
		{"no class is immediate", []string{"noclass"}, map[string]string{"a": ErrReasonUnboundImmediate, "b": ErrReasonUnboundImmediate}},
		{"unknown class is immediate", []string{"unknown-class"}, map[string]string{"a": ErrReasonUnboundImmediate, "b": ErrReasonUnboundImmediate}},
		{"pre-bound but not yet bound", []string{"prebound"}, map[string]string{"a": ErrReasonUnboundImmediate, "b": ErrReasonUnboundImmediate}},
		{"class without provisioner", []string{"manual"}, map[string]string{"a": ErrReasonBindConflict, "b": ErrReasonBindConflict}},
		{"available volume of a class without provisioner", []string{"static"}, map[string]string{"a": "", "b": ErrReasonBindConflict}},
		{"one volume for two claims", []string{"static", "static2"}, map[string]string{"a": ErrReasonBindConflict, "b": ErrReasonBindConflict}},
		{"allowed topologies", []string{"zoned"}, map[string]string{"a": "", "b": ErrReasonBindConflict}},
		{"both conflicts", []string{"on-b", "wffc-b", "zoned"}, map[string]string{"a": ErrReasonBindConflict + ", " + ErrReasonNodeConflict, "b": ErrReasonBindConflict}},
	}
	pl, err := New(Args{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pod := withClaims(ft.MakePod("p"), tc.claims...)
			for node, want := range tc.want {
				s := ft.Filter(context.Background(), pl, snap, pod, node)
				if s.Code() == framework.Error {
					t.Fatalf("node %s: %v", node, s)
				}
				reasons := s.Reasons()
				if s.IsRejected() && s.Code() != framework.UnschedulableAndUnresolvable {
					t.Errorf("node %s: code %v, want UnschedulableAndUnresolvable", node, s.Code())
				}
				// the fast-path order may differ; compare sorted sets.
				got, wantList := slices.Clone(reasons), split(want)
				slices.Sort(got)
				slices.Sort(wantList)
				if !slices.Equal(got, wantList) {
					t.Errorf("node %s: reasons %q, want %q", node, got, want)
				}
			}
		})
	}
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ", ")
}

// TestReserve: the chosen node is assumed as the selected node of the
// unbound wait-for-first-consumer claims, so the next cycle for a pod
// sharing the claim only fits that node; Unreserve forgets it.
func TestReserve(t *testing.T) {
	t.Parallel()
	snap := ft.Snapshot([]*v1.Node{ft.MakeNode("a").Obj(), ft.MakeNode("b").Obj()})
	snap.SetStorageClass(class("local-path", storagev1.VolumeBindingWaitForFirstConsumer, "kubebus.io/local-path"))
	snap.SetClaim(claim("data", "local-path"))
	pl, _ := New(Args{})
	ctx := context.Background()
	pod := withClaims(ft.MakePod("p"), "data")

	state := framework.NewCycleState()
	if _, s := pl.PreFilter(ctx, state, pod, snap); !s.IsSuccess() {
		t.Fatal(s)
	}
	if s := pl.Reserve(ctx, state, pod, "b", snap); !s.IsSuccess() {
		t.Fatal(s)
	}
	if c, _ := snap.Claim("default", "data"); c.Annotations[volume.AnnSelectedNode] != "b" {
		t.Fatalf("assumed claim: %v", c.Annotations)
	}
	other := withClaims(ft.MakePod("q"), "data")
	if s := ft.Filter(ctx, pl, snap, other, "a"); s.Message() != ErrReasonBindConflict {
		t.Errorf("another pod of the claim on a: %v", s)
	}
	if s := ft.Filter(ctx, pl, snap, other, "b"); !s.IsSuccess() {
		t.Errorf("another pod of the claim on b: %v", s)
	}
	pl.Unreserve(ctx, state, pod, "b", snap)
	if c, _ := snap.Claim("default", "data"); c.Annotations[volume.AnnSelectedNode] != "" {
		t.Errorf("after Unreserve: %v", c.Annotations)
	}
	// A newer claim from the informer replaces an assumption.
	_ = pl.Reserve(ctx, state, pod, "b", snap)
	newer := claim("data", "local-path")
	newer.ResourceVersion = "2"
	snap.SetClaim(newer)
	if c, _ := snap.Claim("default", "data"); c != newer {
		t.Errorf("the informer's newer claim did not replace the assumption")
	}
}

func TestArgs(t *testing.T) {
	t.Parallel()
	zero := int64(0)
	if _, err := New(Args{BindTimeoutSeconds: &zero}); err == nil {
		t.Error("bindTimeoutSeconds 0 accepted")
	}
	n := int64(30)
	pl, err := New(Args{BindTimeoutSeconds: &n})
	if err != nil || pl.bindTimeout.Seconds() != 30 {
		t.Errorf("bindTimeoutSeconds 30: %v %v", pl, err)
	}
}

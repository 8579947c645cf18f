package volumebinding

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-helpers/storage/volume"

	"github.com/kubebus/kubebus/scheduler/framework"
	ft "github.com/kubebus/kubebus/scheduler/framework/frameworktest"
)

// fakeHandle reads claims from the fake API; provision makes a claim with
// a selected node read as bound there (the provisioner and the binder).
type fakeHandle struct {
	client    *fake.Clientset
	provision bool
	pod       *v1.Pod
}

func (h *fakeHandle) Client() kubernetes.Interface { return h.client }

func (h *fakeHandle) Claim(ns, name string) (*v1.PersistentVolumeClaim, bool) {
	c, err := h.client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, false
	}
	if h.provision && c.Annotations[volume.AnnSelectedNode] != "" {
		c = bound(c, "pvc-"+string(c.UID))
	}
	return c, true
}

func (h *fakeHandle) Pod(ns, name string) (*v1.Pod, bool) {
	if h.pod == nil || h.pod.Name != name {
		return nil, false
	}
	return h.pod, true
}

func TestPreBind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		apiClaim  *v1.PersistentVolumeClaim // what the API holds when PreBind writes
		provision bool
		podGone   bool
		wantErr   string
		wantSel   string // the selected node in the API afterwards
	}{
		{name: "provisioned and bound", provision: true, wantSel: "b"},
		{name: "timeout takes the annotation off", wantErr: "timed out", wantSel: ""},
		{name: "pod deleted meanwhile", podGone: true, wantErr: "pod does not exist any more", wantSel: ""},
		{name: "another node selected meanwhile", apiClaim: annotate(claim("data", "local-path"), volume.AnnSelectedNode, "a"),
			wantErr: `is being provisioned on node "a"`, wantSel: "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := tc.apiClaim
			if api == nil {
				api = claim("data", "local-path")
			}
			pod := withClaims(ft.MakePod("p"), "data")
			h := &fakeHandle{client: fake.NewClientset(api), provision: tc.provision, pod: pod}
			if tc.podGone {
				h.pod = nil
			}
			snap := ft.Snapshot([]*v1.Node{ft.MakeNode("a").Obj(), ft.MakeNode("b").Obj()})
			snap.SetStorageClass(class("local-path", storagev1.VolumeBindingWaitForFirstConsumer, "kubebus.io/local-path"))
			snap.SetClaim(claim("data", "local-path"))
			pl, _ := New(Args{})
			pl.bindTimeout, pl.pollInterval = 100*time.Millisecond, 5*time.Millisecond
			ctx := context.Background()
			state := framework.NewCycleState()
			if _, s := pl.PreFilter(ctx, state, pod, snap); !s.IsSuccess() {
				t.Fatal(s)
			}
			if s := pl.Reserve(ctx, state, pod, "b", snap); !s.IsSuccess() {
				t.Fatal(s)
			}
			s := pl.PreBind(ctx, state, pod, "b", h)
			switch {
			case tc.wantErr == "" && !s.IsSuccess():
				t.Fatalf("PreBind: %v", s)
			case tc.wantErr != "" && !strings.Contains(s.Message(), tc.wantErr):
				t.Fatalf("PreBind: %v, want an error with %q", s, tc.wantErr)
			}
			got, err := h.client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if sel := got.Annotations[volume.AnnSelectedNode]; sel != tc.wantSel {
				t.Errorf("selected node in the API = %q, want %q", sel, tc.wantSel)
			}
		})
	}
}

// TestPreBindNothingToDo: bound claims need no API call.
func TestPreBindNothingToDo(t *testing.T) {
	t.Parallel()
	snap := ft.Snapshot([]*v1.Node{ft.MakeNode("b").Label("kubernetes.io/hostname", "b").Obj()})
	snap.SetClaim(bound(claim("data", "-"), "pv"))
	snap.SetVolume(localPV("pv", "b"))
	pl, _ := New(Args{})
	pod := withClaims(ft.MakePod("p"), "data")
	state := framework.NewCycleState()
	ctx := context.Background()
	if _, s := pl.PreFilter(ctx, state, pod, snap); !s.IsSuccess() {
		t.Fatal(s)
	}
	_ = pl.Reserve(ctx, state, pod, "b", snap)
	client := fake.NewClientset()
	if s := pl.PreBind(ctx, state, pod, "b", &fakeHandle{client: client, pod: pod}); !s.IsSuccess() {
		t.Fatal(s)
	}
	if n := len(client.Actions()); n != 0 {
		t.Errorf("%d API calls, want none", n)
	}
}

package binder

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/controllers/volume"
)

func TestPlanClaim(t *testing.T) {
	t.Parallel()
	lp := "local-path"
	manual := "manual"
	wffc := class(lp, "kubebus.io/local-path", storagev1.VolumeBindingWaitForFirstConsumer)
	immediate := class(manual, "kubernetes.io/no-provisioner", storagev1.VolumeBindingImmediate)
	bound := func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName, c.Status.Phase = "v", corev1.ClaimBound }
	tests := []struct {
		name        string
		s           claimState
		wantAction  claimAction
		wantVolume  string
		wantClass   string
		wantReason  string
		provisioner string
	}{
		{name: "class-less claim gets the default class",
			s: claimState{Claim: claim(nil, "1Gi"), DefaultClass: lp}, wantAction: claimSetClass, wantClass: lp},
		{name: "explicit empty class is kept",
			s:          claimState{Claim: claim(new(""), "1Gi"), DefaultClass: lp},
			wantReason: reasonFailedBinding},
		{name: "no default class: binds class-less",
			s:          claimState{Claim: claim(nil, "1Gi"), Volumes: []*corev1.PersistentVolume{pv("v", "", "1Gi")}},
			wantAction: claimBind, wantVolume: "v"},
		{name: "immediate class binds a matching volume",
			s: claimState{Claim: claim(&manual, "1Gi"), Class: immediate,
				Volumes: []*corev1.PersistentVolume{pv("v", manual, "2Gi")}},
			wantAction: claimBind, wantVolume: "v"},
		{name: "WaitForFirstConsumer waits without a selected node",
			s: claimState{Claim: claim(&lp, "1Gi"), Class: wffc,
				Volumes: []*corev1.PersistentVolume{pv("v", lp, "2Gi")}},
			wantReason: reasonWaitForFirstConsumer},
		{name: "WaitForFirstConsumer binds a pre-bound volume at once",
			s: claimState{Claim: claim(&lp, "1Gi"), Class: wffc,
				Volumes: []*corev1.PersistentVolume{pv("v", lp, "2Gi", claimedBy("ns", "data", "c1"))}},
			wantAction: claimBind, wantVolume: "v"},
		{name: "selected node: a volume on that node binds",
			s: claimState{Claim: claim(&lp, "1Gi", selectedNode("n1")), Class: wffc, Node: node("n1"),
				Volumes: []*corev1.PersistentVolume{pv("v", lp, "2Gi", onNode("n1"))}},
			wantAction: claimBind, wantVolume: "v"},
		{name: "selected node: none there, ask the provisioner",
			s: claimState{Claim: claim(&lp, "1Gi", selectedNode("n2")), Class: wffc, Node: node("n2"),
				Volumes: []*corev1.PersistentVolume{pv("v", lp, "2Gi", onNode("n1"))}},
			wantAction: claimProvision, provisioner: "kubebus.io/local-path", wantReason: reasonExternalProvisioning},
		{name: "missing class",
			s:          claimState{Claim: claim(new("gold"), "1Gi")},
			wantReason: reasonProvisioningFailed},
		{name: "named volume completes the binding",
			s: claimState{Claim: claim(nil, "1Gi", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "v" }),
				Volumes: []*corev1.PersistentVolume{pv("v", "", "1Gi")}},
			wantAction: claimBind, wantVolume: "v"},
		{name: "named volume not cached yet: wait",
			s: claimState{Claim: claim(nil, "1Gi", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "v" })}},
		{name: "bound claim whose volume is gone is Lost",
			s:          claimState{Claim: claim(nil, "1Gi", bound)},
			wantAction: claimLost, wantReason: reasonClaimLost},
		{name: "bound claim whose volume went elsewhere is Lost",
			s: claimState{Claim: claim(nil, "1Gi", bound),
				Volumes: []*corev1.PersistentVolume{pv("v", "", "1Gi", claimedBy("ns", "other", "o1"))}},
			wantAction: claimLost, wantReason: reasonClaimMisbound},
		{name: "pending claim naming a taken volume",
			s: claimState{Claim: claim(nil, "1Gi", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "v" }),
				Volumes: []*corev1.PersistentVolume{pv("v", "", "1Gi", claimedBy("ns", "other", "o1"))}},
			wantReason: reasonFailedBinding},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := planClaim(tt.s)
			reason := ""
			if d.Event != nil {
				reason = d.Event.Reason
			}
			if d.Action != tt.wantAction || names(d.Volume) != tt.wantVolume || d.Class != tt.wantClass ||
				reason != tt.wantReason || d.Provisioner != tt.provisioner {
				t.Errorf("planClaim = action %d volume %q class %q event %q provisioner %q; want %d %q %q %q %q",
					d.Action, names(d.Volume), d.Class, reason, d.Provisioner,
					tt.wantAction, tt.wantVolume, tt.wantClass, tt.wantReason, tt.provisioner)
			}
		})
	}
}

func TestPlanVolume(t *testing.T) {
	t.Parallel()
	c := claim(nil, "1Gi", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "v" })
	unboundClaim := claim(nil, "1Gi")
	elsewhere := claim(nil, "1Gi", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "other" })
	phaseOf := func(p corev1.PersistentVolumePhase) func(*corev1.PersistentVolume) {
		return func(v *corev1.PersistentVolume) { v.Status.Phase = p }
	}
	policy := func(p corev1.PersistentVolumeReclaimPolicy) func(*corev1.PersistentVolume) {
		return func(v *corev1.PersistentVolume) { v.Spec.PersistentVolumeReclaimPolicy = p }
	}
	annotated := func(k string) func(*corev1.PersistentVolume) {
		return func(v *corev1.PersistentVolume) { v.Annotations = map[string]string{k: "yes"} }
	}
	tests := []struct {
		name   string
		s      volumeState
		action volumeAction
		phase  corev1.PersistentVolumePhase
	}{
		{"new volume becomes Available", volumeState{Volume: pv("v", "", "1Gi", phaseOf(corev1.VolumePending))}, volumePhase, corev1.VolumeAvailable},
		{"available stays", volumeState{Volume: pv("v", "", "1Gi")}, volumeNothing, ""},
		{"pre-bound by name is Available and syncs its claim",
			volumeState{Volume: pv("v", "", "1Gi", claimedBy("ns", "data", ""), phaseOf(corev1.VolumeAvailable))}, volumeSyncClaim, ""},
		{"bound claim: Bound", volumeState{Volume: pv("v", "", "1Gi", claimedBy("ns", "data", "c1"), phaseOf(corev1.VolumeAvailable)), Claim: c},
			volumePhase, corev1.VolumeBound},
		{"bound and Bound: nothing", volumeState{Volume: pv("v", "", "1Gi", claimedBy("ns", "data", "c1")), Claim: c}, volumeNothing, ""},
		{"claim not bound yet: sync it", volumeState{Volume: pv("v", "", "1Gi", claimedBy("ns", "data", "c1")), Claim: unboundClaim}, volumeSyncClaim, ""},
		{"claim gone: Released", volumeState{Volume: pv("v", "", "1Gi", claimedBy("ns", "data", "c1"))}, volumePhase, corev1.VolumeReleased},
		{"released, Retain: kept", volumeState{Volume: pv("v", "", "1Gi", claimedBy("ns", "data", "c1"), phaseOf(corev1.VolumeReleased))}, volumeNothing, ""},
		{"released, Delete: deleted", volumeState{Volume: pv("v", "", "1Gi", claimedBy("ns", "data", "c1"), phaseOf(corev1.VolumeReleased),
			policy(corev1.PersistentVolumeReclaimDelete))}, volumeDelete, ""},
		{"released, Delete, already deleting", volumeState{Volume: pv("v", "", "1Gi", claimedBy("ns", "data", "c1"), phaseOf(corev1.VolumeReleased),
			policy(corev1.PersistentVolumeReclaimDelete), func(v *corev1.PersistentVolume) { v.DeletionTimestamp = new(metav1.Now()) })}, volumeNothing, ""},
		{"released, Recycle: Failed", volumeState{Volume: pv("v", "", "1Gi", claimedBy("ns", "data", "c1"), phaseOf(corev1.VolumeReleased),
			policy(corev1.PersistentVolumeReclaimRecycle))}, volumePhase, corev1.VolumeFailed},
		{"failed stays", volumeState{Volume: pv("v", "", "1Gi", claimedBy("ns", "data", "c1"), phaseOf(corev1.VolumeFailed))}, volumeNothing, ""},
		{"claim bound elsewhere, bound by controller: unbind",
			volumeState{Volume: pv("v", "", "1Gi", claimedBy("ns", "data", "c1"), annotated(volume.AnnBoundByController)), Claim: elsewhere}, volumeUnbind, ""},
		{"claim bound elsewhere, pre-bound by the user: keep the name",
			volumeState{Volume: pv("v", "", "1Gi", claimedBy("ns", "data", "c1")), Claim: elsewhere}, volumeClearUID, ""},
		{"claim bound elsewhere, provisioned with Delete: released",
			volumeState{Volume: pv("v", "", "1Gi", claimedBy("ns", "data", "c1"), annotated(volume.AnnProvisionedBy),
				policy(corev1.PersistentVolumeReclaimDelete)), Claim: elsewhere}, volumePhase, corev1.VolumeReleased},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := planVolume(tt.s)
			if d.Action != tt.action || d.Phase != tt.phase {
				t.Errorf("planVolume = action %d phase %q, want %d %q", d.Action, d.Phase, tt.action, tt.phase)
			}
		})
	}
}

package localpath

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/controllers/volume"
)

func claim(mods ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "data", UID: "1234", Annotations: map[string]string{
			volume.AnnStorageProvisioner: Provisioner, volume.AnnSelectedNode: "node-1"}},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: new(DefaultClassName),
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

func TestPlanVolume(t *testing.T) {
	t.Parallel()
	c := claim()
	pv, fail := Plan(c, DefaultClass(), "/data/storage")
	if fail != "" || pv == nil {
		t.Fatalf("Plan = %v, %q", pv, fail)
	}
	size := pv.Spec.Capacity[corev1.ResourceStorage]
	na := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0]
	switch {
	case pv.Name != "pvc-1234":
		t.Errorf("name %q", pv.Name)
	case pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != "/data/storage/pvc-1234_db_data" || *pv.Spec.HostPath.Type != corev1.HostPathDirectoryOrCreate:
		t.Errorf("hostPath %+v", pv.Spec.HostPath)
	case size.String() != "2Gi", len(pv.Spec.AccessModes) != 1, pv.Spec.StorageClassName != DefaultClassName,
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete:
		t.Errorf("spec %+v", pv.Spec)
	case pv.Spec.ClaimRef.UID != "1234" || pv.Spec.ClaimRef.Namespace != "db" || pv.Spec.ClaimRef.Name != "data":
		t.Errorf("claimRef %+v", pv.Spec.ClaimRef)
	case na.Key != corev1.LabelHostname || na.Operator != corev1.NodeSelectorOpIn || len(na.Values) != 1 || na.Values[0] != "node-1":
		t.Errorf("node affinity %+v", na)
	case pv.Annotations[volume.AnnProvisionedBy] != Provisioner:
		t.Errorf("annotations %v", pv.Annotations)
	}
}

func TestPlanDecision(t *testing.T) {
	t.Parallel()
	immediate := DefaultClass()
	immediate.VolumeBindingMode = new(storagev1.VolumeBindingImmediate)
	other := DefaultClass()
	other.Provisioner = "example.com/nfs"
	retain := DefaultClass()
	retain.ReclaimPolicy = new(corev1.PersistentVolumeReclaimRetain)
	tests := []struct {
		name      string
		claim     *corev1.PersistentVolumeClaim
		class     *storagev1.StorageClass
		provision bool
		fail      failure
	}{
		{"provisions", claim(), DefaultClass(), true, ""},
		{"retain class", claim(), retain, true, ""},
		{"no class", claim(), nil, false, ""},
		{"another provisioner's class", claim(), other, false, ""},
		{"binder has not asked", claim(func(c *corev1.PersistentVolumeClaim) { delete(c.Annotations, volume.AnnStorageProvisioner) }), DefaultClass(), false, ""},
		{"beta annotation asks too", claim(func(c *corev1.PersistentVolumeClaim) {
			delete(c.Annotations, volume.AnnStorageProvisioner)
			c.Annotations[volume.AnnBetaStorageProvisioner] = Provisioner
		}), DefaultClass(), true, ""},
		{"no node yet", claim(func(c *corev1.PersistentVolumeClaim) { delete(c.Annotations, volume.AnnSelectedNode) }), DefaultClass(), false, ""},
		{"immediate class without a node", claim(func(c *corev1.PersistentVolumeClaim) { delete(c.Annotations, volume.AnnSelectedNode) }), immediate, false, failNoNode},
		{"bound already", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv" }), DefaultClass(), false, ""},
		{"being deleted", claim(func(c *corev1.PersistentVolumeClaim) { c.DeletionTimestamp = new(metav1.Now()) }), DefaultClass(), false, ""},
		{"selector", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.Selector = &metav1.LabelSelector{} }), DefaultClass(), false, failSelector},
		{"block", claim(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = new(corev1.PersistentVolumeBlock) }), DefaultClass(), false, failBlockMode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pv, fail := Plan(tt.claim, tt.class, DefaultRoot)
			if (pv != nil) != tt.provision || fail != tt.fail {
				t.Errorf("Plan = %v, %q; want provision %v, %q", pv != nil, fail, tt.provision, tt.fail)
			}
			if pv != nil && pv.Spec.PersistentVolumeReclaimPolicy != *tt.class.ReclaimPolicy {
				t.Errorf("reclaim policy %s", pv.Spec.PersistentVolumeReclaimPolicy)
			}
		})
	}
}

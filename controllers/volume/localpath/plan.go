package localpath

import (
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/controllers/volume"
)

// Provisioner is the provisioner name classes name to use this one.
const Provisioner = "kubebus.io/local-path"

// DefaultClassName is the default StorageClass the provisioner ensures.
const DefaultClassName = "local-path"

// DefaultRoot is where volumes' directories go on the nodes by default.
const DefaultRoot = "/var/lib/kubebus/storage"

// DefaultClass is the StorageClass the provisioner creates when missing,
// as k3s ships it: the cluster's default, WaitForFirstConsumer (a volume is
// made on the node the claim's first pod runs on), Delete.
func DefaultClass() *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: DefaultClassName, Annotations: map[string]string{volume.AnnDefaultClass: "true"}},
		Provisioner:       Provisioner,
		ReclaimPolicy:     new(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: new(storagev1.VolumeBindingWaitForFirstConsumer),
	}
}

// failure is why a claim addressed to this provisioner cannot be
// provisioned: recorded as a ProvisioningFailed Event.
type failure string

// Messages of the claims this provisioner turns down.
const (
	failNoNode     failure = "no node was selected for the claim: the " + Provisioner + " provisioner needs a StorageClass with volumeBindingMode WaitForFirstConsumer"
	failSelector   failure = "claim Selector is not supported"
	failBlockMode  failure = "the " + Provisioner + " provisioner provides only volumeMode Filesystem"
	failDataSource failure = "the " + Provisioner + " provisioner cannot populate a volume from a data source"
)

// Plan returns the volume to create for claim of class, or nil with the
// failure to report (nil, "" when the claim is not this provisioner's to
// act on yet). A claim is provisioned when it is unbound and not being
// deleted, its class names this provisioner, the binder asked for
// provisioning (the storage-provisioner annotation names this one) and,
// the volume being node-local, a node was selected for it.
func Plan(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, root string) (*corev1.PersistentVolume, failure) {
	switch {
	case claim.DeletionTimestamp != nil, claim.Spec.VolumeName != "", claim.Status.Phase != "" && claim.Status.Phase != corev1.ClaimPending,
		class == nil || class.Provisioner != Provisioner,
		claim.Annotations[volume.AnnStorageProvisioner] != Provisioner && claim.Annotations[volume.AnnBetaStorageProvisioner] != Provisioner:
		return nil, ""
	}
	node := claim.Annotations[volume.AnnSelectedNode]
	switch {
	case node == "" && volume.IsWaitForFirstConsumer(class):
		return nil, "" // the scheduler has not placed the first pod yet
	case node == "":
		return nil, failNoNode
	case claim.Spec.Selector != nil:
		return nil, failSelector
	case claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == corev1.PersistentVolumeBlock:
		return nil, failBlockMode
	case claim.Spec.DataSource != nil || claim.Spec.DataSourceRef != nil:
		return nil, failDataSource
	}
	name := VolumeName(claim)
	policy := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		policy = *class.ReclaimPolicy
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{volume.AnnProvisionedBy: Provisioner},
			Finalizers:  []string{volume.PVProtectionFinalizer},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: volume.Request(claim)},
			AccessModes: claim.Spec.AccessModes,
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: filepath.Join(root, name+"_"+claim.Namespace+"_"+claim.Name),
				Type: new(corev1.HostPathDirectoryOrCreate),
			}},
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID, ResourceVersion: claim.ResourceVersion},
			PersistentVolumeReclaimPolicy: policy,
			StorageClassName:              class.Name,
			MountOptions:                  class.MountOptions,
			VolumeMode:                    new(corev1.PersistentVolumeFilesystem),
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}, ""
}

// VolumeName is the name of the volume provisioned for claim: pvc-<uid>.
func VolumeName(claim *corev1.PersistentVolumeClaim) string { return "pvc-" + string(claim.UID) }

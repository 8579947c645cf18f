package binder

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/kubebus/kubebus/controllers/volume"
)

// Event reasons and messages, as upstream's PersistentVolume controller
// writes them.
const (
	reasonFailedBinding        = "FailedBinding"
	reasonWaitForFirstConsumer = "WaitForFirstConsumer"
	reasonExternalProvisioning = "ExternalProvisioning"
	reasonProvisioningFailed   = "ProvisioningFailed"
	reasonClaimLost            = "ClaimLost"
	reasonClaimMisbound        = "ClaimMisbound"
	reasonVolumeFailedRecycle  = "VolumeFailedRecycle"

	msgNoClass       = "no persistent volumes available for this claim and no storage class is set"
	msgWaitConsumer  = "waiting for first consumer to be created before binding"
	msgClaimLost     = "Bound claim has lost its PersistentVolume. Data on the volume is lost!"
	msgClaimMisbound = "Two claims are bound to the same volume, this one is bound incorrectly"
	msgNoRecycler    = "No recycler plugin found for the volume!"
)

// event is an Event to record on the object synced.
type event struct {
	Type, Reason, Message string
}

type claimAction int

const (
	claimNothing   claimAction = iota
	claimSetClass              // give a class-less claim the default class
	claimBind                  // bind the claim and Volume to each other
	claimProvision             // ask Provisioner for a volume, then wait
	claimLost                  // the bound volume is gone or taken: phase Lost
)

// claimState is what syncing a claim reads.
type claimState struct {
	Claim   *corev1.PersistentVolumeClaim
	Volumes []*corev1.PersistentVolume
	// Class is the claim's StorageClass, nil when it names none or the
	// class does not exist.
	Class *storagev1.StorageClass
	// DefaultClass is the name of the cluster's default class ("": none).
	DefaultClass string
	// Node is the node the claim's selected-node annotation names (nil
	// without the annotation).
	Node *corev1.Node
}

type claimDecision struct {
	Action      claimAction
	Volume      *corev1.PersistentVolume
	Class       string // for claimSetClass
	Provisioner string // for claimProvision
	Event       *event
}

// planClaim decides what a claim needs, as upstream's syncClaim: an unbound
// claim gets the default class if it has none, then binds to a matching
// volume, or waits for its first consumer (WaitForFirstConsumer classes)
// or for its class's provisioner; a claim naming a volume completes the
// binding, or is Lost when the volume is gone or bound elsewhere.
func planClaim(s claimState) claimDecision {
	c := s.Claim
	if c.Spec.VolumeName != "" {
		return planNamedClaim(s)
	}
	if _, beta := c.Annotations[corev1.BetaStorageClassAnnotation]; !beta && c.Spec.StorageClassName == nil && s.DefaultClass != "" {
		return claimDecision{Action: claimSetClass, Class: s.DefaultClass}
	}
	class := volume.ClaimClass(c)
	if volume.IsWaitForFirstConsumer(s.Class) && c.Annotations[volume.AnnSelectedNode] == "" {
		// Only a volume pre-bound to the claim binds before a pod is placed.
		for _, pv := range s.Volumes {
			if volume.IsBoundTo(pv, c) && pv.DeletionTimestamp == nil {
				return claimDecision{Action: claimBind, Volume: pv}
			}
		}
		return claimDecision{Event: &event{corev1.EventTypeNormal, reasonWaitForFirstConsumer, msgWaitConsumer}}
	}
	if pv := FindMatch(c, s.Volumes, s.Node); pv != nil {
		return claimDecision{Action: claimBind, Volume: pv}
	}
	switch {
	case class == "":
		return claimDecision{Event: &event{corev1.EventTypeNormal, reasonFailedBinding, msgNoClass}}
	case s.Class == nil:
		return claimDecision{Event: &event{corev1.EventTypeWarning, reasonProvisioningFailed,
			fmt.Sprintf("storageclass.storage.k8s.io %q not found", class)}}
	}
	p := s.Class.Provisioner
	return claimDecision{Action: claimProvision, Provisioner: p, Event: &event{corev1.EventTypeNormal, reasonExternalProvisioning,
		fmt.Sprintf("Waiting for a volume to be created either by the external provisioner '%s' or manually by the system administrator. "+
			"If volume creation is delayed, please verify that the provisioner is running and correctly registered.", p)}}
}

// planNamedClaim handles a claim whose spec.volumeName is set.
func planNamedClaim(s claimState) claimDecision {
	c := s.Claim
	var pv *corev1.PersistentVolume
	for _, v := range s.Volumes {
		if v.Name == c.Spec.VolumeName {
			pv = v
			break
		}
	}
	bound := c.Status.Phase == corev1.ClaimBound
	switch {
	case pv == nil && bound:
		return claimDecision{Action: claimLost, Event: &event{corev1.EventTypeWarning, reasonClaimLost, msgClaimLost}}
	case pv == nil:
		return claimDecision{} // the volume may not be in the cache yet
	case pv.Spec.ClaimRef == nil || volume.IsBoundTo(pv, c):
		return claimDecision{Action: claimBind, Volume: pv}
	case bound:
		return claimDecision{Action: claimLost, Event: &event{corev1.EventTypeWarning, reasonClaimMisbound, msgClaimMisbound}}
	}
	return claimDecision{Event: &event{corev1.EventTypeWarning, reasonFailedBinding,
		fmt.Sprintf("volume %q already bound to a different claim.", pv.Name)}}
}

type volumeAction int

const (
	volumeNothing   volumeAction = iota
	volumePhase                  // set status.phase to Phase
	volumeSyncClaim              // the claim side must finish: sync the claim
	volumeUnbind                 // clear claimRef: Available again
	volumeClearUID               // keep the user's pre-binding by name, drop the UID
	volumeDelete                 // reclaim policy Delete: delete the volume
)

// volumeState is what syncing a volume reads.
type volumeState struct {
	Volume *corev1.PersistentVolume
	// Claim is the claim the claimRef names, nil when it does not exist
	// (or exists with another UID: a new claim of the same name).
	Claim *corev1.PersistentVolumeClaim
}

type volumeDecision struct {
	Action volumeAction
	Phase  corev1.PersistentVolumePhase
	Reason string // status.reason with Phase Failed
	Event  *event
}

// planVolume decides what a volume needs, as upstream's syncVolume: a
// volume without a claim is Available; one whose claim is gone is Released
// and then reclaimed by its policy (Retain keeps it, Delete deletes it,
// Recycle is unsupported and fails); one whose claim is bound to it is
// Bound; one whose claim went to another volume is freed.
func planVolume(s volumeState) volumeDecision {
	pv := s.Volume
	ref := pv.Spec.ClaimRef
	switch {
	case ref == nil:
		return phase(pv, corev1.VolumeAvailable)
	case ref.UID == "":
		if pv.Status.Phase != corev1.VolumeAvailable {
			return phase(pv, corev1.VolumeAvailable)
		}
		return volumeDecision{Action: volumeSyncClaim}
	case s.Claim == nil:
		return releaseOrReclaim(pv)
	case s.Claim.Spec.VolumeName == "":
		return volumeDecision{Action: volumeSyncClaim}
	case s.Claim.Spec.VolumeName == pv.Name:
		return phase(pv, corev1.VolumeBound)
	case pv.Annotations[volume.AnnProvisionedBy] != "" && pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete:
		// Provisioned for a claim that bound elsewhere: not needed.
		return releaseOrReclaim(pv)
	case pv.Annotations[volume.AnnBoundByController] != "":
		return volumeDecision{Action: volumeUnbind}
	}
	return volumeDecision{Action: volumeClearUID}
}

func phase(pv *corev1.PersistentVolume, p corev1.PersistentVolumePhase) volumeDecision {
	if pv.Status.Phase == p {
		return volumeDecision{}
	}
	return volumeDecision{Action: volumePhase, Phase: p}
}

// releaseOrReclaim marks a volume whose claim is gone Released, then
// applies its reclaim policy.
func releaseOrReclaim(pv *corev1.PersistentVolume) volumeDecision {
	switch pv.Status.Phase {
	case corev1.VolumeFailed:
		return volumeDecision{}
	case corev1.VolumeReleased:
	default:
		return volumeDecision{Action: volumePhase, Phase: corev1.VolumeReleased}
	}
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case corev1.PersistentVolumeReclaimDelete:
		if pv.DeletionTimestamp != nil {
			return volumeDecision{} // already being deleted
		}
		return volumeDecision{Action: volumeDelete}
	case corev1.PersistentVolumeReclaimRecycle:
		return volumeDecision{Action: volumePhase, Phase: corev1.VolumeFailed, Reason: reasonVolumeFailedRecycle,
			Event: &event{corev1.EventTypeWarning, reasonVolumeFailedRecycle, msgNoRecycler}}
	}
	return volumeDecision{} // Retain: an administrator reclaims it
}

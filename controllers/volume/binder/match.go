package binder

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/kubebus/kubebus/controllers/volume"
)

// FindMatch returns the volume claim should bind to, or nil. A volume
// pre-bound to the claim (its claimRef names it) wins if node, when given,
// satisfies its node affinity. Otherwise the smallest Available, unclaimed
// volume that fits: same class, same volume mode, every access mode the
// claim asks for, capacity at least the request, labels matched by the
// claim's selector, node affinity satisfied by node (nil: not checked). A
// volume being deleted never matches. Ties go to the first by name, so the
// choice is the same on every sync.
func FindMatch(claim *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, node *corev1.Node) *corev1.PersistentVolume {
	var sel labels.Selector
	if claim.Spec.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(claim.Spec.Selector)
		if err != nil {
			return nil // an invalid selector matches nothing
		}
		sel = s
	}
	class, request := volume.ClaimClass(claim), volume.Request(claim)
	var best *corev1.PersistentVolume
	var bestSize resource.Quantity
	for _, pv := range volumes {
		if pv.DeletionTimestamp != nil || !sameVolumeMode(claim, pv) {
			continue
		}
		fits := node == nil || nodeAffinityAllows(pv, node)
		if volume.IsBoundTo(pv, claim) {
			if fits {
				return pv
			}
			return nil // pre-bound elsewhere: nothing else may take the claim
		}
		switch {
		case pv.Spec.ClaimRef != nil, pv.Status.Phase != corev1.VolumeAvailable, !fits,
			volume.VolumeClass(pv) != class, !hasAccessModes(pv, claim.Spec.AccessModes),
			sel != nil && !sel.Matches(labels.Set(pv.Labels)):
			continue
		}
		size := pv.Spec.Capacity[corev1.ResourceStorage]
		if size.Cmp(request) < 0 {
			continue
		}
		if best == nil || size.Cmp(bestSize) < 0 || size.Cmp(bestSize) == 0 && pv.Name < best.Name {
			best, bestSize = pv, size
		}
	}
	return best
}

// sameVolumeMode compares volume modes, unset meaning Filesystem.
func sameVolumeMode(claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) bool {
	mode := func(m *corev1.PersistentVolumeMode) corev1.PersistentVolumeMode {
		if m == nil {
			return corev1.PersistentVolumeFilesystem
		}
		return *m
	}
	return mode(claim.Spec.VolumeMode) == mode(pv.Spec.VolumeMode)
}

// hasAccessModes reports whether pv offers every mode in want.
func hasAccessModes(pv *corev1.PersistentVolume, want []corev1.PersistentVolumeAccessMode) bool {
	for _, w := range want {
		found := false
		for _, have := range pv.Spec.AccessModes {
			if have == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// nodeAffinityAllows reports whether node satisfies pv's required node
// affinity (a volume without one is reachable from every node).
func nodeAffinityAllows(pv *corev1.PersistentVolume, node *corev1.Node) bool {
	na := pv.Spec.NodeAffinity
	if na == nil || na.Required == nil {
		return true
	}
	ok, err := corev1helpers.MatchNodeSelectorTerms(node, na.Required)
	return err == nil && ok
}

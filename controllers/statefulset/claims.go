package statefulset

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// persistentVolumeClaimRetentionPolicy, as upstream, through owner
// references on the claims the garbage collector follows: WhenDeleted
// Delete makes the set an owner of every claim; WhenScaled Delete makes a
// scaled-down pod the owner of its claims, so they go with it.

var podKind = corev1.SchemeGroupVersion.WithKind("Pod")

func retentionPolicy(set *appsv1.StatefulSet) appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	p := appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	if r := set.Spec.PersistentVolumeClaimRetentionPolicy; r != nil {
		if r.WhenDeleted != "" {
			p.WhenDeleted = r.WhenDeleted
		}
		if r.WhenScaled != "" {
			p.WhenScaled = r.WhenScaled
		}
	}
	return p
}

// wantedOwners says whether claim (of pod p, which must exist for a pod
// owner) should be owned by the set and by the pod.
func wantedOwners(set *appsv1.StatefulSet, p *corev1.Pod) (bySet, byPod bool) {
	pol := retentionPolicy(set)
	const del = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	scaledDown := !inRange(set, p)
	switch {
	case pol.WhenScaled == del && pol.WhenDeleted == del:
		return !scaledDown, scaledDown
	case pol.WhenScaled == del:
		return false, scaledDown
	case pol.WhenDeleted == del:
		return true, false
	}
	return false, false
}

func hasOwner(obj metav1.Object, uid string) bool {
	return slices.ContainsFunc(obj.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return string(r.UID) == uid })
}

// claimOwnersMatch reports whether claim's owner references follow the
// retention policy for pod p.
func claimOwnersMatch(set *appsv1.StatefulSet, p *corev1.Pod, claim *corev1.PersistentVolumeClaim) bool {
	bySet, byPod := wantedOwners(set, p)
	if hasOwner(claim, string(set.UID)) != bySet {
		return false
	}
	if p.UID == "" {
		return !byPod
	}
	return hasOwner(claim, string(p.UID)) == byPod
}

// setClaimOwners rewrites claim's owner references to follow the
// retention policy for pod p and reports whether it changed anything.
func setClaimOwners(set *appsv1.StatefulSet, p *corev1.Pod, claim *corev1.PersistentVolumeClaim) bool {
	bySet, byPod := wantedOwners(set, p)
	changed := setOwner(claim, bySet, metav1.OwnerReference{APIVersion: kind.GroupVersion().String(), Kind: kind.Kind, Name: set.Name, UID: set.UID})
	if p.UID != "" || !byPod {
		changed = setOwner(claim, byPod, metav1.OwnerReference{APIVersion: "v1", Kind: podKind.Kind, Name: p.Name, UID: p.UID}) || changed
	}
	return changed
}

func setOwner(claim *corev1.PersistentVolumeClaim, want bool, ref metav1.OwnerReference) bool {
	has := hasOwner(claim, string(ref.UID))
	switch {
	case want && !has && ref.UID != "":
		claim.OwnerReferences = append(claim.OwnerReferences, ref)
		return true
	case !want && has:
		claim.OwnerReferences = slices.DeleteFunc(claim.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == ref.UID })
		return true
	}
	return false
}

// staleClaim reports whether claim still belongs to an earlier pod of the
// same name (a scaled-down pod whose claim the garbage collector has yet to
// delete): the new pod must wait for it to go.
func staleClaim(set *appsv1.StatefulSet, p *corev1.Pod, claim *corev1.PersistentVolumeClaim) bool {
	if retentionPolicy(set).WhenScaled == appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		return false
	}
	return slices.ContainsFunc(claim.OwnerReferences, func(r metav1.OwnerReference) bool {
		return r.Kind == podKind.Kind && r.Name == p.Name && r.UID != p.UID
	})
}

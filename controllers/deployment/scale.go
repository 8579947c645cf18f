package deployment

import (
	"cmp"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
)

// isScalingEvent reports whether spec.replicas changed since the active
// ReplicaSets were last sized (their desired-replicas annotation).
func isScalingEvent(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) bool {
	for _, rs := range activeReplicaSets(withNew(old, newRS)) {
		if v, ok := annotationInt(rs, DesiredReplicasAnnotation); ok && v != desired(d) {
			return true
		}
	}
	return false
}

// activeOrLatest returns the only active ReplicaSet; with none active, the
// new one or else the newest old one; with several active, nil.
func activeOrLatest(newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	active := activeReplicaSets(withNew(old, newRS))
	switch len(active) {
	case 1:
		return active[0]
	case 0:
		if newRS != nil {
			return newRS
		}
		if len(old) == 0 {
			return nil
		}
		return slices.MaxFunc(old, olderFirst)
	}
	return nil
}

// isSaturated: the new ReplicaSet has all the replicas, sized for the
// current spec.replicas, and all of them available.
func isSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	v, ok := annotationInt(rs, DesiredReplicasAnnotation)
	return ok && v == desired(d) && replicas(rs) == desired(d) && rs.Status.AvailableReplicas == desired(d)
}

// planScale sizes the ReplicaSets after spec.replicas changed (or while
// paused). One active ReplicaSet simply takes spec.replicas; a saturated new
// one leaves the old ones nothing; otherwise, in a rolling update, the
// replicas to add or remove (up to replicas+maxSurge in total) are spread
// over the active ReplicaSets in proportion to their size, the remainder
// going to the largest. Every active ReplicaSet gets an entry, so that the
// caller refreshes the size annotations even where the size stays.
func planScale(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) []resize {
	if rs := activeOrLatest(newRS, old); rs != nil {
		return []resize{{rs, desired(d)}}
	}
	if isSaturated(d, newRS) {
		var out []resize
		for _, rs := range activeReplicaSets(old) {
			out = append(out, resize{rs, 0})
		}
		return out
	}
	if !isRolling(d) {
		return nil
	}
	active := activeReplicaSets(withNew(old, newRS))
	var allowed int32
	if desired(d) > 0 {
		allowed = desired(d) + maxSurge(d)
	}
	toAdd := allowed - sumSpec(active)
	// Largest first; on a tie, the newer when growing and the older when
	// shrinking.
	slices.SortFunc(active, func(a, b *appsv1.ReplicaSet) int {
		if c := cmp.Compare(replicas(b), replicas(a)); c != 0 {
			return c
		}
		if toAdd > 0 {
			return olderFirst(b, a)
		}
		return olderFirst(a, b)
	})
	out := make([]resize, len(active))
	var added int32
	for i, rs := range active {
		p := proportion(d, rs, toAdd, added)
		out[i] = resize{rs, replicas(rs) + p}
		added += p
	}
	if len(out) > 0 && toAdd != 0 {
		out[0].to = max(0, out[0].to+toAdd-added)
	}
	return out
}

// proportion is rs's share of toAdd (negative: to remove), given that added
// was already handed out.
func proportion(d *appsv1.Deployment, rs *appsv1.ReplicaSet, toAdd, added int32) int32 {
	if replicas(rs) == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	f := fraction(d, rs)
	left := toAdd - added
	if toAdd > 0 {
		return min(f, left)
	}
	return max(f, left)
}

// fraction is how much rs grows or shrinks when the Deployment goes from
// the size rs was last sized for (its max-replicas annotation, else the
// Deployment's status.replicas) to replicas+maxSurge.
func fraction(d *appsv1.Deployment, rs *appsv1.ReplicaSet) int32 {
	if desired(d) == 0 {
		return -replicas(rs)
	}
	target := desired(d) + maxSurge(d)
	base, ok := annotationInt(rs, MaxReplicasAnnotation)
	if !ok {
		base = d.Status.Replicas
	}
	if base <= 0 {
		return 0
	}
	return roundHalfAway(float64(replicas(rs))*float64(target)/float64(base)) - replicas(rs)
}

package deployment

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
)

// resize is a decision to give a ReplicaSet a size.
type resize struct {
	rs *appsv1.ReplicaSet
	to int32
}

// newRSTarget is the size the new ReplicaSet should have now: spec.replicas
// for Recreate, and for a RollingUpdate as much as the surge allows.
func newRSTarget(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	want, cur := desired(d), replicas(newRS)
	switch {
	case cur >= want:
		return want
	case !isRolling(d):
		return want
	}
	// Count every pod that may still exist, the new ReplicaSet's included.
	ceiling := desired(d) + maxSurge(d)
	present := podCeiling(all)
	if !slices.Contains(all, newRS) {
		present += max(cur, newRS.Status.Replicas)
	}
	if present >= ceiling {
		return cur
	}
	return cur + min(ceiling-present, want-cur)
}

// scaleDownOld decides a rolling update's scale-down of the old
// ReplicaSets, oldest first: first their unavailable pods, as far as the
// total may shrink without going below replicas-maxUnavailable counting the
// new ReplicaSet's missing pods; then available pods, as far as available
// pods exceed replicas-maxUnavailable. Only changed sizes are returned.
func scaleDownOld(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) []resize {
	old = activeReplicaSets(old)
	if len(old) == 0 {
		return nil
	}
	slices.SortFunc(old, olderFirst)
	minAvailable := desired(d) - maxUnavailable(d)
	newUnavailable := replicas(newRS) - availableFloor(newRS)
	maxScaledDown := sumSpec(old) + replicas(newRS) - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return nil
	}
	size := make(map[*appsv1.ReplicaSet]int32, len(old))
	for _, rs := range old {
		size[rs] = replicas(rs)
	}
	// Unhealthy pods first: they would otherwise block the rollout.
	var cleaned int32
	for _, rs := range old {
		if cleaned >= maxScaledDown {
			break
		}
		unhealthy := size[rs] - availableFloor(rs)
		if unhealthy <= 0 {
			continue
		}
		n := min(maxScaledDown-cleaned, unhealthy)
		size[rs] -= n
		cleaned += n
	}
	// Then healthy pods, keeping minAvailable available.
	available := availableFloor(newRS)
	for _, rs := range old {
		available += min(availableFloor(rs), size[rs])
	}
	if excess := available - minAvailable; excess > 0 {
		var scaled int32
		for _, rs := range old {
			if scaled >= excess {
				break
			}
			n := min(size[rs], excess-scaled)
			size[rs] -= n
			scaled += n
		}
	}
	var out []resize
	for _, rs := range old {
		if size[rs] != replicas(rs) {
			out = append(out, resize{rs, size[rs]})
		}
	}
	return out
}

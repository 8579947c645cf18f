package daemonset

import (
	"context"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/controllers/claim"
)

// candidates are the pods ds controls and the orphans of its namespace
// (both found through the pod cache's indexes).
func (r *reconciler) candidates(ds *appsv1.DaemonSet) []*corev1.Pod {
	out := slices.Clone(r.pods.ByIndex(cache.ByOwnerUID, string(ds.UID)))
	seen := make(map[types.UID]bool, len(out))
	for _, p := range out {
		seen[p.UID] = true
	}
	for _, p := range r.pods.ByIndex(cache.ByOrphanNamespace, ds.Namespace) {
		if !seen[p.UID] {
			out = append(out, p)
		}
	}
	return out
}

// claimPods returns the pods ds controls after adopting matching orphans
// and releasing the pods it no longer selects (package claim decides).
func (r *reconciler) claimPods(ctx context.Context, ds *appsv1.DaemonSet, sel labels.Selector) ([]*corev1.Pod, error) {
	plan := claim.Sort(ds, claim.Selects[*corev1.Pod](sel), r.candidates(ds))
	return claim.Apply(ctx, plan, claim.Writes[*corev1.Pod]{
		Kind: "pod",
		CanAdopt: func(ctx context.Context) error {
			return claim.CanAdopt(ctx, "daemonset", ds, r.w.dsets.Get)
		},
		Adopt: func(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
			if err := claim.PatchOwners(ctx, p, claim.AdoptRefs(ds, controllerKind, p), r.w.pods.Patch); err != nil {
				return nil, err
			}
			return p, nil
		},
		Release: func(ctx context.Context, p *corev1.Pod) error {
			return claim.PatchOwners(ctx, p, claim.ReleaseRefs(ds, p), r.w.pods.Patch)
		},
	})
}

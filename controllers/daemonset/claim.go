package daemonset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/controllers/cache"
)

// claims sorts the candidate pods of a DaemonSet (those it controls and
// the orphans its selector matches) into the ones it keeps, the orphans it
// adopts and the pods it controls but no longer selects, which it releases.
type claims struct {
	owned, adopt, release []*corev1.Pod
}

// planClaims decides ownership as upstream's controller-ref manager does: a
// pod controlled by someone else is never touched; a DaemonSet being
// deleted neither adopts nor releases; a pod being deleted is not adopted.
func planClaims(ds *appsv1.DaemonSet, sel labels.Selector, candidates []*corev1.Pod) claims {
	var c claims
	deleting := ds.DeletionTimestamp != nil
	for _, p := range candidates {
		if p.Namespace != ds.Namespace {
			continue
		}
		matches := !sel.Empty() && sel.Matches(labels.Set(p.Labels))
		ref := metav1.GetControllerOfNoCopy(p)
		switch {
		case ref != nil && ref.UID != ds.UID:
			// Someone else's.
		case ref != nil && matches:
			c.owned = append(c.owned, p)
		case ref != nil:
			if !deleting {
				c.release = append(c.release, p)
			}
		case matches && !deleting && p.DeletionTimestamp == nil:
			c.adopt = append(c.adopt, p)
		}
	}
	return c
}

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
// and releasing the pods it no longer selects.
func (r *reconciler) claimPods(ctx context.Context, ds *appsv1.DaemonSet, sel labels.Selector) ([]*corev1.Pod, error) {
	c := planClaims(ds, sel, r.candidates(ds))
	owned := c.owned
	var errs []error
	if len(c.adopt) > 0 {
		if err := r.canAdopt(ctx, ds); err != nil {
			errs = append(errs, err)
		} else {
			for _, p := range c.adopt {
				if err := r.patchOwners(ctx, p, adoptPatch(ds, p)); err != nil {
					errs = append(errs, fmt.Errorf("adopting pod %s/%s: %w", p.Namespace, p.Name, err))
					continue
				}
				owned = append(owned, p)
			}
		}
	}
	for _, p := range c.release {
		if err := r.patchOwners(ctx, p, releasePatch(ds, p)); err != nil {
			errs = append(errs, fmt.Errorf("releasing pod %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	return owned, errors.Join(errs...)
}

// canAdopt reads ds from the API server: a DaemonSet that is gone,
// replaced or being deleted must not adopt (the cache may lag).
func (r *reconciler) canAdopt(ctx context.Context, ds *appsv1.DaemonSet) error {
	fresh, err := r.w.dsets.Get(ctx, ds.Namespace, ds.Name)
	if err != nil {
		return fmt.Errorf("checking daemonset %s/%s before adopting: %w", ds.Namespace, ds.Name, err)
	}
	if fresh.UID != ds.UID {
		return fmt.Errorf("daemonset %s/%s was replaced (uid %s, cached %s)", ds.Namespace, ds.Name, fresh.UID, ds.UID)
	}
	if fresh.DeletionTimestamp != nil {
		return fmt.Errorf("daemonset %s/%s is being deleted", ds.Namespace, ds.Name)
	}
	return nil
}

func (r *reconciler) patchOwners(ctx context.Context, p *corev1.Pod, refs []metav1.OwnerReference) error {
	patch, err := json.Marshal(mergePatch{Metadata: patchMeta{UID: p.UID, ResourceVersion: p.ResourceVersion, OwnerReferences: refs}})
	if err != nil {
		return fmt.Errorf("encoding the owner patch of pod %s: %w", p.Name, err)
	}
	if err := r.w.pods.Patch(ctx, p.Namespace, p.Name, patch); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// mergePatch is the JSON merge patch that sets a pod's owner references,
// pinned to the version the decision was made on: if the pod changed since,
// the patch conflicts and the sync runs again on fresh state.
type mergePatch struct {
	Metadata patchMeta `json:"metadata"`
}

type patchMeta struct {
	UID             types.UID               `json:"uid"`
	ResourceVersion string                  `json:"resourceVersion"`
	OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
}

// adoptPatch is p's owners with ds added as controller.
func adoptPatch(ds *appsv1.DaemonSet, p *corev1.Pod) []metav1.OwnerReference {
	return append(slices.Clone(p.OwnerReferences), *metav1.NewControllerRef(ds, controllerKind))
}

// releasePatch is p's owners without ds.
func releasePatch(ds *appsv1.DaemonSet, p *corev1.Pod) []metav1.OwnerReference {
	refs := slices.DeleteFunc(slices.Clone(p.OwnerReferences), func(r metav1.OwnerReference) bool { return r.UID == ds.UID })
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	return refs
}

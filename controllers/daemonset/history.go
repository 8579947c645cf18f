package daemonset

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/controllers/history"
)

// ownedRevisions are the cached ControllerRevisions ds controls.
func (r *reconciler) ownedRevisions(ds *appsv1.DaemonSet) []*appsv1.ControllerRevision {
	var out []*appsv1.ControllerRevision
	for _, rev := range r.revs.ByIndex(cache.ByOwnerUID, string(ds.UID)) {
		if c := metav1.GetControllerOfNoCopy(rev); c != nil && c.UID == ds.UID && rev.Namespace == ds.Namespace {
			out = append(out, rev)
		}
	}
	return out
}

// splitRevisions separates the revisions that hold data (the current
// template) from the others.
func splitRevisions(revs []*appsv1.ControllerRevision, data runtime.RawExtension) (cur, old []*appsv1.ControllerRevision) {
	for _, rev := range revs {
		if sameData(rev.Data.Raw, data.Raw) {
			cur = append(cur, rev)
		} else {
			old = append(old, rev)
		}
	}
	return cur, old
}

// sameData compares revision data: the same bytes, or the same JSON
// (keys in another order; only decoded when the lengths agree, so a sync
// does not decode every old revision).
func sameData(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	if len(a) != len(b) {
		return false
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// constructHistory returns the revision of ds's current template, creating
// it (numbered after every other) when there is none, or renumbering it
// when an older template's revision is numbered higher (a rollback), and
// the other revisions. collisions is ds's collision count after a hash
// collision bumped it (nil when unchanged).
func (r *reconciler) constructHistory(ctx context.Context, ds *appsv1.DaemonSet) (cur *appsv1.ControllerRevision, old []*appsv1.ControllerRevision, collisions *int32, err error) {
	data, err := history.TemplatePatch(ds.Spec.Template)
	if err != nil {
		return nil, nil, nil, err
	}
	owned := r.ownedRevisions(ds)
	for i, rev := range owned {
		if _, ok := rev.Labels[history.ControllerRevisionHashLabel]; ok {
			continue
		}
		// A revision without the hash label (made by someone else): label
		// it with its name, as upstream.
		cp := rev.DeepCopy()
		if cp.Labels == nil {
			cp.Labels = map[string]string{}
		}
		cp.Labels[history.ControllerRevisionHashLabel] = cp.Name
		if owned[i], err = r.w.revs.Update(ctx, cp); err != nil {
			return nil, nil, nil, fmt.Errorf("labelling ControllerRevision %s/%s: %w", rev.Namespace, rev.Name, err)
		}
	}
	current, old := splitRevisions(owned, data)
	next := history.NextRevision(old)
	if len(current) > 0 {
		history.SortControllerRevisions(current)
		cur = current[len(current)-1]
		old = append(old, current[:len(current)-1]...)
		if cur.Revision < next {
			if cur, err = history.UpdateRevision(ctx, r.w.revs, cur, next); err != nil {
				return nil, nil, nil, err
			}
		}
		return cur, old, nil, nil
	}
	var count int32
	if ds.Status.CollisionCount != nil {
		count = *ds.Status.CollisionCount
	}
	rev, err := history.NewControllerRevision(ds, controllerKind, ds.Spec.Template.Labels, data, next, &count)
	if err != nil {
		return nil, nil, nil, err
	}
	rev.Annotations = maps.Clone(ds.Annotations)
	before := count
	cur, err = history.CreateControllerRevision(ctx, r.w.revs, ds, rev, &count)
	if count != before {
		collisions = &count
	}
	if err != nil {
		return nil, nil, collisions, err
	}
	return cur, old, collisions, nil
}

// cleanupHistory deletes the oldest revisions beyond
// spec.revisionHistoryLimit, keeping any a pod of ds still runs.
func (r *reconciler) cleanupHistory(ctx context.Context, ds *appsv1.DaemonSet, old []*appsv1.ControllerRevision, pods []*corev1.Pod) error {
	limit := 10
	if ds.Spec.RevisionHistoryLimit != nil {
		limit = int(*ds.Spec.RevisionHistoryLimit)
	}
	toKill := len(old) - limit
	if toKill <= 0 {
		return nil
	}
	live := map[string]bool{}
	for _, p := range pods {
		if h := p.Labels[history.ControllerRevisionHashLabel]; h != "" {
			live[h] = true
		}
	}
	sorted := append([]*appsv1.ControllerRevision(nil), old...)
	history.SortControllerRevisions(sorted)
	for _, rev := range sorted {
		if toKill <= 0 {
			break
		}
		if live[rev.Labels[history.ControllerRevisionHashLabel]] {
			continue
		}
		if err := r.w.revs.Delete(ctx, rev.Namespace, rev.Name); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting ControllerRevision %s/%s: %w", rev.Namespace, rev.Name, err)
		}
		toKill--
	}
	return nil
}

package statefulset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubebus/kubebus/controllers/claim"
)

// execute makes a plan's writes. OrderedReady runs them one by one and
// stops at the first failure; Parallel runs each phase's writes at once,
// in slow-start batches (1, 2, 4, ...), and stops after a failed batch.
func (r *reconciler) execute(ctx context.Context, set *appsv1.StatefulSet, pl plan) error {
	if pl.sequential {
		for _, a := range pl.actions {
			if err := r.do(ctx, set, a); err != nil {
				return err
			}
		}
		return nil
	}
	for ph := phaseReplicas; ph <= phaseUpdate; ph++ {
		var group []action
		for _, a := range pl.actions {
			if a.phase == ph {
				group = append(group, a)
			}
		}
		for size := 1; len(group) > 0; size *= 2 {
			batch := group[:min(size, len(group))]
			group = group[len(batch):]
			if err := r.doAll(ctx, set, batch); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *reconciler) doAll(ctx context.Context, set *appsv1.StatefulSet, batch []action) error {
	errs := make([]error, len(batch))
	var wg sync.WaitGroup
	for i, a := range batch {
		wg.Go(func() { errs[i] = r.do(ctx, set, a) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// do makes one action's writes and records its Events.
func (r *reconciler) do(ctx context.Context, set *appsv1.StatefulSet, a action) error {
	r.log.Debug("statefulset action", "statefulset", set.Namespace+"/"+set.Name, "action", a.kind.String(), "pod", a.pod.Name, "why", a.why)
	switch a.kind {
	case createPod:
		if err := r.createClaims(ctx, set, a.pod, a.claims); err != nil {
			return err
		}
		_, err := r.client.CoreV1().Pods(a.pod.Namespace).Create(ctx, a.pod, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache is behind; the pod's event syncs again
		}
		r.podEvent(set, "create", a.pod, err)
		return wrap(err, "creating pod %s/%s", a.pod.Namespace, a.pod.Name)
	case deletePod:
		uid := a.pod.UID
		err := r.client.CoreV1().Pods(a.pod.Namespace).Delete(ctx, a.pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil // gone already, or replaced by a namesake
		}
		r.podEvent(set, "delete", a.pod, err)
		return wrap(err, "deleting pod %s/%s", a.pod.Namespace, a.pod.Name)
	case updatePod:
		_, err := r.client.CoreV1().Pods(a.pod.Namespace).Update(ctx, a.pod, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		r.podEvent(set, "update", a.pod, err)
		return wrap(err, "updating pod %s/%s", a.pod.Namespace, a.pod.Name)
	case createClaims:
		return r.createClaims(ctx, set, a.pod, a.claims)
	case updateClaims:
		var errs []error
		for _, c := range a.claims {
			_, err := r.client.CoreV1().PersistentVolumeClaims(c.Namespace).Update(ctx, c, metav1.UpdateOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("updating the owners of claim %s/%s: %w", c.Namespace, c.Name, err))
			}
		}
		return errors.Join(errs...)
	}
	return fmt.Errorf("statefulset: unknown action %d", a.kind)
}

// createClaims creates pod's missing claims; one that appeared meanwhile
// is fine.
func (r *reconciler) createClaims(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod, claims []*corev1.PersistentVolumeClaim) error {
	var errs []error
	for _, c := range claims {
		_, err := r.client.CoreV1().PersistentVolumeClaims(c.Namespace).Create(ctx, c, metav1.CreateOptions{})
		switch {
		case err == nil:
			r.rec.Eventf(set, corev1.EventTypeNormal, ReasonSuccessfulCreate, "create Claim %s Pod %s in StatefulSet %s success", c.Name, pod.Name, set.Name)
		case apierrors.IsAlreadyExists(err):
		default:
			if ctx.Err() == nil {
				r.rec.Eventf(set, corev1.EventTypeWarning, ReasonFailedCreate, "create Claim %s for Pod %s in StatefulSet %s failed error: %s", c.Name, pod.Name, set.Name, err)
			}
			errs = append(errs, fmt.Errorf("creating claim %s/%s: %w", c.Namespace, c.Name, err))
		}
	}
	return errors.Join(errs...)
}

// podEvent records a pod write as upstream words it: "create Pod web-0 in
// StatefulSet web successful".
func (r *reconciler) podEvent(set *appsv1.StatefulSet, verb string, pod *corev1.Pod, err error) {
	title := strings.ToUpper(verb[:1]) + verb[1:]
	if err == nil {
		r.rec.Eventf(set, corev1.EventTypeNormal, "Successful"+title, "%s Pod %s in StatefulSet %s successful", verb, pod.Name, set.Name)
		return
	}
	r.rec.Eventf(set, corev1.EventTypeWarning, "Failed"+title, "%s Pod %s in StatefulSet %s failed error: %s", verb, pod.Name, set.Name, err)
}

// patchPodOwners sets p's owner references with a JSON merge patch pinned
// to p's uid and resourceVersion; a pod that is gone needs nothing.
func (r *reconciler) patchPodOwners(ctx context.Context, p *corev1.Pod, refs []metav1.OwnerReference) error {
	return claim.PatchOwners(ctx, p, refs, func(ctx context.Context, namespace, name string, patch []byte) error {
		_, err := r.client.CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}

func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

package daemonset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/history"
	"github.com/kubebus/kubebus/controllers/podwrite"
)

// availabilitySlack is added to the wait for a pod to become available, so
// the sync it schedules does not run a hair too early.
const availabilitySlack = 50 * time.Millisecond

// Reconcile syncs one DaemonSet: its revision history, its pods (when no
// earlier writes are still unobserved: manage first, then the rolling
// update) and its status.
func (r *reconciler) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	key := req.String()
	ds, ok := r.dsets.Get(req.Namespace, req.Name)
	if !ok {
		r.exp.Forget(key)
		return controllers.Result{}, nil
	}
	if ds.DeletionTimestamp != nil {
		return controllers.Result{}, nil // the garbage collector deletes its pods
	}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return controllers.Result{}, controllers.Terminal(fmt.Errorf("daemonset %s: invalid selector: %w", key, err))
	}
	if sel.Empty() {
		r.rec.Event(ds, corev1.EventTypeWarning, ReasonSelectingAll, "This daemon set is selecting all pods. A non-empty selector is required.")
		return controllers.Result{}, nil
	}
	// Decide before reading the pods: a pod whose creation is observed
	// after this point is in the cache when it is read below.
	satisfied := r.exp.Satisfied(key)
	cur, old, collisions, err := r.constructHistory(ctx, ds)
	if err != nil {
		if collisions != nil {
			st := *ds.Status.DeepCopy()
			st.CollisionCount = collisions
			err = errors.Join(err, r.updateStatus(ctx, ds, st))
		}
		return controllers.Result{}, err
	}
	hash := cur.Labels[history.ControllerRevisionHashLabel]
	pods, err := r.claimPods(ctx, ds, sel)
	if err != nil {
		return controllers.Result{}, err
	}
	w := newWorld(ds, r.nodes.List(), pods, hash, r.now())
	var manageErr error
	var retryFailed time.Duration
	if satisfied {
		a := w.manage(r.burst)
		a, retryFailed = r.backoff.holdBackFailed(string(ds.UID), a, w.now)
		if a.empty() && ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
			a = w.rollingUpdate()
		}
		manageErr = r.apply(ctx, ds, podTemplate(ds, hash), a)
	}
	if err := r.cleanupHistory(ctx, ds, old, pods); err != nil {
		manageErr = errors.Join(manageErr, err)
	}
	st, next := w.status()
	if collisions != nil {
		st.CollisionCount = collisions
	}
	if statusChanged(ds, st) {
		if err := r.updateStatus(ctx, ds, st); err != nil {
			return controllers.Result{}, errors.Join(manageErr, err)
		}
	}
	if manageErr != nil {
		return controllers.Result{}, manageErr
	}
	if retryFailed > 0 && (next == 0 || retryFailed < next) {
		next = retryFailed
	}
	if next > 0 {
		return controllers.Result{RequeueAfter: next + availabilitySlack}, nil
	}
	return controllers.Result{}, nil
}

// apply makes the plan's writes: deletions in parallel, creations in
// slow-start batches (each batch in parallel, the next only after the
// previous one succeeded), with their expectations and Events.
func (r *reconciler) apply(ctx context.Context, ds *appsv1.DaemonSet, template *corev1.PodTemplateSpec, a actions) error {
	if a.empty() {
		return nil
	}
	key := controllers.KeyOf(ds).String()
	dels := make([]string, len(a.delete))
	for i, p := range a.delete {
		dels[i] = podKey(p)
	}
	r.exp.Expect(key, len(a.create), dels)
	for _, p := range a.failed {
		r.rec.Eventf(ds, corev1.EventTypeWarning, ReasonFailedDaemonPod, "Found failed daemon pod %s/%s on node %s, will try to kill it", p.Namespace, p.Name, p.Spec.NodeName)
	}
	var wg sync.WaitGroup
	var delErr, createErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		delErr = r.deletePods(ctx, ds, a.delete)
	}()
	createErr = r.createPods(ctx, ds, template, a.create)
	wg.Wait()
	if err := errors.Join(delErr, createErr); err != nil {
		return fmt.Errorf("syncing the pods of daemonset %s: %w", key, err)
	}
	r.log.Debug("synced pods", "daemonset", key, "created", len(a.create), "deleted", len(a.delete))
	return nil
}

// createPods creates a pod for each node in slow-start batches, stopping
// after a batch with a failure. Creations that did not happen are taken
// off the expectations at once.
func (r *reconciler) createPods(ctx context.Context, ds *appsv1.DaemonSet, template *corev1.PodTemplateSpec, nodes []string) error {
	key := controllers.KeyOf(ds).String()
	created, err := podwrite.Creates{
		Create: func(ctx context.Context, i int) (*corev1.Pod, error) {
			return r.w.pods.Create(ctx, newPod(ds, template, nodes[i]))
		},
		Recorder: r.rec,
		Object:   ds,
	}.InBatches(ctx, len(nodes))
	if missed := len(nodes) - created; missed > 0 {
		r.exp.CreationsObserved(key, missed)
	}
	if err != nil {
		return fmt.Errorf("creating pods (%d of %d created): %w", created, len(nodes), err)
	}
	return nil
}

// deletePods deletes the victims in parallel.
func (r *reconciler) deletePods(ctx context.Context, ds *appsv1.DaemonSet, victims []*corev1.Pod) error {
	key := controllers.KeyOf(ds).String()
	_, err := podwrite.Deletes{
		Delete:   r.w.pods.Delete,
		Recorder: r.rec,
		Object:   ds,
		Unseen:   func(p *corev1.Pod) { r.exp.DeletionObserved(key, podKey(p)) },
	}.All(ctx, victims)
	return err
}

func (r *reconciler) updateStatus(ctx context.Context, ds *appsv1.DaemonSet, st appsv1.DaemonSetStatus) error {
	cp := ds.DeepCopy()
	cp.Status = st
	if _, err := r.w.dsets.UpdateStatus(ctx, cp); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating the status of daemonset %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	return nil
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

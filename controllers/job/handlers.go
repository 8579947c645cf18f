package job

import (
	"maps"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
	"github.com/kubebus/kubebus/controllers/claim"
)

// register adds the informer handlers. A Job created or changed in its
// spec is synced at once; a status change or a pod change is synced after
// the batch period, so that one sync handles a burst. Pod changes settle
// the expectations they answer; pods that must lose their tracking
// finalizer without a Job to do it go to the orphan queue.
func (r *reconciler) register(enqueue func(controllers.Request), enqueueAfter func(controllers.Request, time.Duration), orphan func(controllers.Request)) {
	r.enqueueOrphan = orphan
	batched := func(j *batchv1.Job) { enqueueAfter(controllers.KeyOf(j), r.batch) }
	r.jobs.AddHandler(informer.HandlerFuncs[*batchv1.Job]{
		AddFunc: func(j *batchv1.Job) { enqueue(controllers.KeyOf(j)) },
		UpdateFunc: func(old, cur *batchv1.Job) {
			if old.Generation != cur.Generation {
				enqueue(controllers.KeyOf(cur))
				return
			}
			batched(cur)
		},
		DeleteFunc: func(j *batchv1.Job) {
			r.orphanPodsOf(j)
			enqueue(controllers.KeyOf(j))
		},
	})
	h := podHandler{r: r, enqueue: batched}
	r.pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{AddFunc: h.added, UpdateFunc: h.updated, DeleteFunc: h.deleted})
}

// orphanPodsOf queues the pods of a Job (deleted or finished) that still
// carry the tracking finalizer.
func (r *reconciler) orphanPodsOf(j *batchv1.Job) {
	for _, p := range r.pods.ByIndex(cache.ByOwnerUID, string(j.UID)) {
		if p.Namespace == j.Namespace && hasTracking(p) {
			r.enqueueOrphan(controllers.KeyOf(p))
		}
	}
}

type podHandler struct {
	r       *reconciler
	enqueue func(*batchv1.Job)
}

func (h podHandler) added(p *corev1.Pod) {
	if j := h.r.controllerOf(p); j != nil {
		key := controllers.KeyOf(j).String()
		h.r.exp.CreationsObserved(key, 1)
		if p.DeletionTimestamp != nil {
			h.r.exp.DeletionsObserved(key, 1)
		}
		h.enqueue(j)
		return
	}
	if hasTracking(p) {
		h.r.enqueueOrphan(controllers.KeyOf(p))
	}
	if metav1.GetControllerOfNoCopy(p) == nil && p.DeletionTimestamp == nil {
		h.enqueueSelecting(p)
	}
}

func (h podHandler) updated(old, cur *corev1.Pod) {
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	if oldRef, curRef := metav1.GetControllerOfNoCopy(old), metav1.GetControllerOfNoCopy(cur); oldRef != nil && (curRef == nil || curRef.UID != oldRef.UID) {
		if j := h.r.resolve(old.Namespace, oldRef); j != nil {
			h.enqueue(j)
		}
	}
	j := h.r.controllerOf(cur)
	if j == nil {
		if hasTracking(cur) {
			h.r.enqueueOrphan(controllers.KeyOf(cur))
		}
		if metav1.GetControllerOfNoCopy(cur) == nil && !maps.Equal(old.Labels, cur.Labels) {
			h.enqueueSelecting(cur)
		}
		return
	}
	key := controllers.KeyOf(j).String()
	if cur.DeletionTimestamp != nil && old.DeletionTimestamp == nil {
		h.r.exp.DeletionsObserved(key, 1)
	}
	if !hasTracking(cur) {
		h.r.fin.removed(key, cur.UID)
	}
	if isFinished(j) && hasTracking(cur) {
		h.r.enqueueOrphan(controllers.KeyOf(cur))
	}
	h.enqueue(j)
}

func (h podHandler) deleted(p *corev1.Pod) {
	j := h.r.controllerOf(p)
	if j == nil {
		return
	}
	key := controllers.KeyOf(j).String()
	if p.DeletionTimestamp == nil {
		h.r.exp.DeletionsObserved(key, 1)
	}
	h.r.fin.removed(key, p.UID)
	h.enqueue(j)
}

// enqueueSelecting syncs every Job in the orphan's namespace whose
// selector matches it: one may adopt it.
func (h podHandler) enqueueSelecting(p *corev1.Pod) {
	for _, j := range claim.Selecting(h.r.jobs.ListNamespace(p.Namespace), jobSelector, p.Labels) {
		h.enqueue(j)
	}
}

func (r *reconciler) controllerOf(p *corev1.Pod) *batchv1.Job {
	return claim.ControllerOf(p, controllerKind.Kind, r.jobs.Get)
}

// resolve returns the cached Job a controller reference names, or nil.
func (r *reconciler) resolve(namespace string, ref *metav1.OwnerReference) *batchv1.Job {
	return claim.Resolve(ref, controllerKind.Kind, namespace, r.jobs.Get)
}

func jobSelector(j *batchv1.Job) *metav1.LabelSelector { return j.Spec.Selector }

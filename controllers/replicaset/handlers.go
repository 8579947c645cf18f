package replicaset

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/claim"
)

// register adds the informer handlers: a ReplicaSet change enqueues it; a
// pod change enqueues its controlling ReplicaSet (or, for an orphan, every
// ReplicaSet that selects it) and settles the expectations it answers.
func (r *reconciler) register(enqueue func(controllers.Request)) {
	r.rsets.AddHandler(informer.HandlerFuncs[*appsv1.ReplicaSet]{
		AddFunc:    func(rs *appsv1.ReplicaSet) { enqueue(controllers.KeyOf(rs)) },
		UpdateFunc: func(_, rs *appsv1.ReplicaSet) { enqueue(controllers.KeyOf(rs)) },
		DeleteFunc: func(rs *appsv1.ReplicaSet) {
			r.exp.Forget(controllers.KeyOf(rs).String())
			enqueue(controllers.KeyOf(rs))
		},
	})
	h := podHandler{r: r, enqueue: enqueue}
	r.pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{AddFunc: h.added, UpdateFunc: h.updated, DeleteFunc: h.deleted})
}

type podHandler struct {
	r       *reconciler
	enqueue func(controllers.Request)
}

func (h podHandler) added(p *corev1.Pod) {
	if ref := metav1.GetControllerOf(p); ref != nil {
		rs := h.r.resolve(p.Namespace, ref)
		if rs == nil {
			return // not a ReplicaSet's, or one this cache does not hold
		}
		key := controllers.KeyOf(rs)
		h.r.exp.CreationsObserved(key.String(), 1)
		if p.DeletionTimestamp != nil {
			h.r.exp.DeletionObserved(key.String(), podKey(p))
		}
		h.enqueue(key)
		return
	}
	if p.DeletionTimestamp == nil {
		h.enqueueSelecting(p)
	}
}

func (h podHandler) updated(old, cur *corev1.Pod) {
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	labelsChanged := !maps.Equal(old.Labels, cur.Labels)
	if cur.DeletionTimestamp != nil {
		// Graceful deletion started: for the ReplicaSet the pod is gone.
		h.deleted(cur)
		if labelsChanged {
			h.deleted(old)
		}
		return
	}
	oldRef, curRef := metav1.GetControllerOf(old), metav1.GetControllerOf(cur)
	refChanged := !sameRef(oldRef, curRef)
	if refChanged && oldRef != nil {
		if rs := h.r.resolve(old.Namespace, oldRef); rs != nil {
			h.enqueue(controllers.KeyOf(rs))
		}
	}
	if curRef != nil {
		if rs := h.r.resolve(cur.Namespace, curRef); rs != nil {
			h.enqueue(controllers.KeyOf(rs))
		}
		return
	}
	if labelsChanged || refChanged {
		h.enqueueSelecting(cur)
	}
}

func (h podHandler) deleted(p *corev1.Pod) {
	rs := h.r.controllerOf(p)
	if rs == nil {
		return
	}
	key := controllers.KeyOf(rs)
	h.r.exp.DeletionObserved(key.String(), podKey(p))
	h.enqueue(key)
}

// enqueueSelecting enqueues every ReplicaSet in the orphan's namespace
// whose selector matches it: one of them may adopt it.
func (h podHandler) enqueueSelecting(p *corev1.Pod) {
	for _, rs := range claim.Selecting(h.r.rsets.ListNamespace(p.Namespace), rsSelector, p.Labels) {
		h.enqueue(controllers.KeyOf(rs))
	}
}

// controllerOf returns the cached ReplicaSet controlling p, or nil.
func (r *reconciler) controllerOf(p *corev1.Pod) *appsv1.ReplicaSet {
	return claim.ControllerOf(p, controllerKind.Kind, r.rsets.Get)
}

// resolve returns the cached ReplicaSet a controller reference names, or
// nil when it is not a ReplicaSet or not this incarnation of it.
func (r *reconciler) resolve(namespace string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	return claim.Resolve(ref, controllerKind.Kind, namespace, r.rsets.Get)
}

func rsSelector(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector }

func sameRef(a, b *metav1.OwnerReference) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.UID == b.UID
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

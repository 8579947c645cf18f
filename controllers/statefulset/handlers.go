package statefulset

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/claim"
)

// register adds the informer handlers: a set change enqueues the set; a
// pod or revision change enqueues its controlling set (for an orphan, the
// sets that select it); a claim change enqueues the sets that own it.
func (r *reconciler) register(enqueue func(controllers.Request)) {
	r.sets.AddHandler(informer.HandlerFuncs[*appsv1.StatefulSet]{
		AddFunc:    func(s *appsv1.StatefulSet) { enqueue(controllers.KeyOf(s)) },
		UpdateFunc: func(_, s *appsv1.StatefulSet) { enqueue(controllers.KeyOf(s)) },
		DeleteFunc: func(s *appsv1.StatefulSet) { enqueue(controllers.KeyOf(s)) },
	})
	r.pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod) { r.enqueueFor(enqueue, p, p.DeletionTimestamp == nil) },
		UpdateFunc: func(old, cur *corev1.Pod) {
			if old.ResourceVersion == cur.ResourceVersion {
				return
			}
			if ref := metav1.GetControllerOfNoCopy(old); ref != nil && !sameUID(ref, metav1.GetControllerOfNoCopy(cur)) {
				r.enqueueRef(enqueue, old.Namespace, ref)
			}
			r.enqueueFor(enqueue, cur, cur.DeletionTimestamp == nil)
		},
		DeleteFunc: func(p *corev1.Pod) { r.enqueueFor(enqueue, p, false) },
	})
	r.revs.AddHandler(informer.HandlerFuncs[*appsv1.ControllerRevision]{
		AddFunc:    func(c *appsv1.ControllerRevision) { r.enqueueFor(enqueue, c, true) },
		UpdateFunc: func(_, c *appsv1.ControllerRevision) { r.enqueueFor(enqueue, c, true) },
		DeleteFunc: func(c *appsv1.ControllerRevision) { r.enqueueFor(enqueue, c, false) },
	})
	claimOwners := func(c *corev1.PersistentVolumeClaim) {
		for _, ref := range c.OwnerReferences {
			r.enqueueRef(enqueue, c.Namespace, &ref)
		}
	}
	r.claims.AddHandler(informer.HandlerFuncs[*corev1.PersistentVolumeClaim]{
		AddFunc:    claimOwners,
		UpdateFunc: func(_, c *corev1.PersistentVolumeClaim) { claimOwners(c) },
		DeleteFunc: claimOwners,
	})
}

// enqueueFor enqueues the set controlling obj or, for an orphan (when
// orphans may be adopted), every set in its namespace that selects it.
func (r *reconciler) enqueueFor(enqueue func(controllers.Request), obj metav1.Object, orphans bool) {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		r.enqueueRef(enqueue, obj.GetNamespace(), ref)
		return
	}
	if !orphans {
		return
	}
	for _, s := range claim.Selecting(r.sets.ListNamespace(obj.GetNamespace()), setSelector, obj.GetLabels()) {
		enqueue(controllers.KeyOf(s))
	}
}

// enqueueRef enqueues the cached set a reference names, if it is this
// incarnation of a StatefulSet.
func (r *reconciler) enqueueRef(enqueue func(controllers.Request), namespace string, ref *metav1.OwnerReference) {
	if s := claim.Resolve(ref, kind.Kind, namespace, r.sets.Get); s != nil {
		enqueue(controllers.KeyOf(s))
	}
}

func setSelector(s *appsv1.StatefulSet) *metav1.LabelSelector { return s.Spec.Selector }

func sameUID(a, b *metav1.OwnerReference) bool { return b != nil && a.UID == b.UID }

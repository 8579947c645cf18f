package deployment

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/claim"
)

// register adds the informer handlers: a Deployment change enqueues it; a
// ReplicaSet change enqueues its controlling Deployment (or, for an orphan,
// every Deployment that selects it); a pod deletion enqueues the Recreate
// Deployment waiting for it.
func (r *reconciler) register(enqueue func(controllers.Request)) {
	r.deps.AddHandler(informer.HandlerFuncs[*appsv1.Deployment]{
		AddFunc:    func(d *appsv1.Deployment) { enqueue(controllers.KeyOf(d)) },
		UpdateFunc: func(_, d *appsv1.Deployment) { enqueue(controllers.KeyOf(d)) },
		DeleteFunc: func(d *appsv1.Deployment) { enqueue(controllers.KeyOf(d)) },
	})
	h := rsHandler{r: r, enqueue: enqueue}
	r.rsets.AddHandler(informer.HandlerFuncs[*appsv1.ReplicaSet]{AddFunc: h.added, UpdateFunc: h.updated, DeleteFunc: h.deleted})
	r.pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{DeleteFunc: func(p *corev1.Pod) {
		if d := r.deploymentOfPod(p); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
			enqueue(controllers.KeyOf(d))
		}
	}})
}

type rsHandler struct {
	r       *reconciler
	enqueue func(controllers.Request)
}

func (h rsHandler) added(rs *appsv1.ReplicaSet) {
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if d := h.r.resolve(rs.Namespace, ref); d != nil {
			h.enqueue(controllers.KeyOf(d))
		}
		return
	}
	if rs.DeletionTimestamp == nil {
		h.enqueueSelecting(rs)
	}
}

func (h rsHandler) updated(old, cur *appsv1.ReplicaSet) {
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	oldRef, curRef := metav1.GetControllerOf(old), metav1.GetControllerOf(cur)
	refChanged := (oldRef == nil) != (curRef == nil) || (oldRef != nil && oldRef.UID != curRef.UID)
	if refChanged && oldRef != nil {
		if d := h.r.resolve(old.Namespace, oldRef); d != nil {
			h.enqueue(controllers.KeyOf(d))
		}
	}
	if curRef != nil {
		if d := h.r.resolve(cur.Namespace, curRef); d != nil {
			h.enqueue(controllers.KeyOf(d))
		}
		return
	}
	if refChanged || !maps.Equal(old.Labels, cur.Labels) {
		h.enqueueSelecting(cur)
	}
}

func (h rsHandler) deleted(rs *appsv1.ReplicaSet) {
	if ref := metav1.GetControllerOf(rs); ref != nil {
		if d := h.r.resolve(rs.Namespace, ref); d != nil {
			h.enqueue(controllers.KeyOf(d))
		}
	}
}

// enqueueSelecting enqueues every Deployment in the orphan's namespace
// whose selector matches it: one of them may adopt it.
func (h rsHandler) enqueueSelecting(rs *appsv1.ReplicaSet) {
	for _, d := range claim.Selecting(h.r.deps.ListNamespace(rs.Namespace), deploymentSelector, rs.Labels) {
		h.enqueue(controllers.KeyOf(d))
	}
}

// resolve returns the cached Deployment a controller reference names, or
// nil when it is not a Deployment or not this incarnation of it.
func (r *reconciler) resolve(namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	return claim.Resolve(ref, controllerKind.Kind, namespace, r.deps.Get)
}

func deploymentSelector(d *appsv1.Deployment) *metav1.LabelSelector { return d.Spec.Selector }

// deploymentOfPod returns the Deployment controlling the pod's ReplicaSet.
func (r *reconciler) deploymentOfPod(p *corev1.Pod) *appsv1.Deployment {
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return nil
	}
	rs, ok := r.rsets.Get(p.Namespace, ref.Name)
	if !ok || rs.UID != ref.UID {
		return nil
	}
	dref := metav1.GetControllerOf(rs)
	if dref == nil {
		return nil
	}
	return r.resolve(rs.Namespace, dref)
}

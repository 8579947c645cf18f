package daemonset

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/claim"
)

// register adds the informer handlers: a DaemonSet change enqueues it; a
// pod change enqueues its controlling DaemonSet (or, for an orphan, every
// DaemonSet that selects it) and settles the expectations it answers; a
// node that comes, goes or changes what decides eligibility (labels,
// taints, unschedulable) enqueues every DaemonSet; a revision change
// enqueues its DaemonSet.
func (r *reconciler) register(enqueue func(controllers.Request)) {
	r.dsets.AddHandler(informer.HandlerFuncs[*appsv1.DaemonSet]{
		AddFunc:    func(ds *appsv1.DaemonSet) { enqueue(controllers.KeyOf(ds)) },
		UpdateFunc: func(_, ds *appsv1.DaemonSet) { enqueue(controllers.KeyOf(ds)) },
		DeleteFunc: func(ds *appsv1.DaemonSet) {
			r.exp.Forget(controllers.KeyOf(ds).String())
			enqueue(controllers.KeyOf(ds))
		},
	})
	h := podHandler{r: r, enqueue: enqueue}
	r.pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{AddFunc: h.added, UpdateFunc: h.updated, DeleteFunc: h.deleted})
	all := func() {
		for _, ds := range r.dsets.List() {
			enqueue(controllers.KeyOf(ds))
		}
	}
	r.nodes.AddHandler(informer.HandlerFuncs[*corev1.Node]{
		AddFunc: func(*corev1.Node) { all() },
		UpdateFunc: func(old, cur *corev1.Node) {
			if nodeEligibilityChanged(old, cur) {
				all()
			}
		},
		DeleteFunc: func(*corev1.Node) { all() },
	})
	rev := func(cr *appsv1.ControllerRevision) {
		if ref := metav1.GetControllerOfNoCopy(cr); ref != nil && ref.Kind == controllerKind.Kind {
			enqueue(controllers.Request{Namespace: cr.Namespace, Name: ref.Name})
		}
	}
	r.revs.AddHandler(informer.HandlerFuncs[*appsv1.ControllerRevision]{
		AddFunc:    rev,
		DeleteFunc: rev,
	})
}

// nodeEligibilityChanged says whether a node update may change which
// DaemonSets belong on it: its labels, taints, unschedulable flag or name
// fields. Status updates (heartbeats) do not.
func nodeEligibilityChanged(old, cur *corev1.Node) bool {
	return !maps.Equal(old.Labels, cur.Labels) ||
		!apiequality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints) ||
		old.Spec.Unschedulable != cur.Spec.Unschedulable
}

type podHandler struct {
	r       *reconciler
	enqueue func(controllers.Request)
}

func (h podHandler) added(p *corev1.Pod) {
	if ds := h.r.controllerOf(p); ds != nil {
		key := controllers.KeyOf(ds)
		h.r.exp.CreationsObserved(key.String(), 1)
		if p.DeletionTimestamp != nil {
			h.r.exp.DeletionObserved(key.String(), podKey(p))
		}
		h.enqueue(key)
		return
	}
	if metav1.GetControllerOfNoCopy(p) == nil && p.DeletionTimestamp == nil {
		h.enqueueSelecting(p)
	}
}

func (h podHandler) updated(old, cur *corev1.Pod) {
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	if cur.DeletionTimestamp != nil && old.DeletionTimestamp == nil {
		// Graceful deletion started: for the DaemonSet the pod is gone.
		h.deleted(cur)
		return
	}
	oldDS, curDS := h.r.controllerOf(old), h.r.controllerOf(cur)
	if oldDS != nil && (curDS == nil || oldDS.UID != curDS.UID) {
		h.enqueue(controllers.KeyOf(oldDS))
	}
	if curDS != nil {
		h.enqueue(controllers.KeyOf(curDS))
		return
	}
	if metav1.GetControllerOfNoCopy(cur) == nil && !maps.Equal(old.Labels, cur.Labels) {
		h.enqueueSelecting(cur)
	}
}

func (h podHandler) deleted(p *corev1.Pod) {
	ds := h.r.controllerOf(p)
	if ds == nil {
		return
	}
	key := controllers.KeyOf(ds)
	h.r.exp.DeletionObserved(key.String(), podKey(p))
	h.enqueue(key)
}

// enqueueSelecting enqueues every DaemonSet in the orphan's namespace
// whose selector matches it: one of them may adopt it.
func (h podHandler) enqueueSelecting(p *corev1.Pod) {
	for _, ds := range claim.Selecting(h.r.dsets.ListNamespace(p.Namespace), dsSelector, p.Labels) {
		h.enqueue(controllers.KeyOf(ds))
	}
}

// controllerOf returns the cached DaemonSet controlling p, or nil.
func (r *reconciler) controllerOf(p *corev1.Pod) *appsv1.DaemonSet {
	return claim.ControllerOf(p, controllerKind.Kind, r.dsets.Get)
}

func dsSelector(ds *appsv1.DaemonSet) *metav1.LabelSelector { return ds.Spec.Selector }

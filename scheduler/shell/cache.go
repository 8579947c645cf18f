package shell

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubebus/kubebus/bus/informer"
)

// addHandlers keeps the snapshot and the queue from the informers. The
// handlers run on the informers' goroutines; the snapshot is touched only
// under s.mu, between cycles, and released even when a handler panics
// (the informer recovers it and goes on).
func (s *Scheduler) addHandlers() {
	s.nodes.AddHandler(informer.HandlerFuncs[*corev1.Node]{
		AddFunc: func(n *corev1.Node) {
			s.withSnap(func() { s.snap.AddNode(n) })
			s.queue.MoveAll()
		},
		UpdateFunc: func(old, n *corev1.Node) {
			s.withSnap(func() { s.snap.UpdateNode(n) })
			if nodeChanged(old, n) {
				s.queue.MoveAll()
			}
		},
		DeleteFunc: func(n *corev1.Node) {
			s.withSnap(func() { s.snap.RemoveNode(n.Name) })
		},
	})
	s.pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{
		AddFunc:    func(p *corev1.Pod) { s.podChanged(nil, p) },
		UpdateFunc: func(old, p *corev1.Pod) { s.podChanged(old, p) },
		DeleteFunc: s.podDeleted,
	})
	s.namespaces.AddHandler(informer.HandlerFuncs[*corev1.Namespace]{
		AddFunc: func(ns *corev1.Namespace) {
			s.withSnap(func() { s.snap.SetNamespace(ns) })
		},
		UpdateFunc: func(_, ns *corev1.Namespace) {
			s.withSnap(func() { s.snap.SetNamespace(ns) })
			s.queue.MoveAll()
		},
		DeleteFunc: func(ns *corev1.Namespace) {
			s.withSnap(func() { s.snap.RemoveNamespace(ns.Name) })
		},
	})
	s.addStorageHandlers()
}

// addStorageHandlers keeps the claims, volumes and classes VolumeBinding
// reads in the snapshot. Any change may let a pod waiting on its volumes
// fit (a claim created or bound, a volume created, a class added), so
// each moves the unschedulable pods back.
func (s *Scheduler) addStorageHandlers() {
	if s.claims != nil {
		setClaim := func(c *corev1.PersistentVolumeClaim) { s.storageChanged(func() { s.snap.SetClaim(c) }) }
		s.claims.AddHandler(informer.HandlerFuncs[*corev1.PersistentVolumeClaim]{
			AddFunc:    setClaim,
			UpdateFunc: func(_, c *corev1.PersistentVolumeClaim) { setClaim(c) },
			DeleteFunc: func(c *corev1.PersistentVolumeClaim) { s.withSnap(func() { s.snap.RemoveClaim(c.Namespace, c.Name) }) },
		})
	}
	if s.volumes != nil {
		setVolume := func(pv *corev1.PersistentVolume) { s.storageChanged(func() { s.snap.SetVolume(pv) }) }
		s.volumes.AddHandler(informer.HandlerFuncs[*corev1.PersistentVolume]{
			AddFunc:    setVolume,
			UpdateFunc: func(_, pv *corev1.PersistentVolume) { setVolume(pv) },
			DeleteFunc: func(pv *corev1.PersistentVolume) { s.withSnap(func() { s.snap.RemoveVolume(pv.Name) }) },
		})
	}
	if s.classes != nil {
		setClass := func(sc *storagev1.StorageClass) { s.storageChanged(func() { s.snap.SetStorageClass(sc) }) }
		s.classes.AddHandler(informer.HandlerFuncs[*storagev1.StorageClass]{
			AddFunc:    setClass,
			UpdateFunc: func(_, sc *storagev1.StorageClass) { setClass(sc) },
			DeleteFunc: func(sc *storagev1.StorageClass) { s.withSnap(func() { s.snap.RemoveStorageClass(sc.Name) }) },
		})
	}
}

// storageChanged applies a storage object's change to the snapshot and
// moves the unschedulable pods back.
func (s *Scheduler) storageChanged(apply func()) {
	s.withSnap(apply)
	s.queue.MoveAll()
}

// nodeChanged reports a change that may let a pod fit: labels, taints,
// unschedulable, allocatable or images.
func nodeChanged(old, n *corev1.Node) bool {
	return !equality.Semantic.DeepEqual(old.Labels, n.Labels) ||
		!equality.Semantic.DeepEqual(old.Spec, n.Spec) ||
		!equality.Semantic.DeepEqual(old.Status.Allocatable, n.Status.Allocatable) ||
		len(old.Status.Images) != len(n.Status.Images)
}

func (s *Scheduler) responsible(p *corev1.Pod) bool {
	_, ok := s.profiles[p.Spec.SchedulerName]
	return ok
}

func terminated(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func (s *Scheduler) podChanged(old, p *corev1.Pod) {
	if p.Spec.NodeName != "" {
		// Bound (by us or anyone): the cache holds it; an assumed pod is
		// confirmed. A pod that finished frees its node.
		s.withSnap(func() { s.snap.AddPod(p) })
		s.queue.Delete(p)
		if terminated(p) && (old == nil || !terminated(old)) {
			s.queue.MoveAll()
		}
		return
	}
	if !s.responsible(p) || terminated(p) {
		return
	}
	var assumed bool
	s.withSnap(func() {
		_, assumed = s.snap.NodeNameOf(p)
		if !assumed {
			if n := p.Status.NominatedNodeName; n != "" {
				s.snap.AddNominatedPod(p, n)
			} else {
				s.snap.RemoveNominatedPod(p)
			}
		}
	})
	switch {
	case assumed:
		// Being bound: an update of the pending object must not queue it
		// again.
	case p.DeletionTimestamp != nil:
		s.queue.Delete(p)
	case old == nil || !equality.Semantic.DeepEqual(old.Spec, p.Spec) || !equality.Semantic.DeepEqual(old.Labels, p.Labels):
		s.queue.Add(p)
	default:
		s.queue.Update(p)
	}
}

func (s *Scheduler) podDeleted(p *corev1.Pod) {
	var removed bool
	s.withSnap(func() {
		removed = s.snap.RemovePod(p)
		s.snap.RemoveNominatedPod(p)
	})
	s.queue.Delete(p)
	if removed {
		s.queue.MoveAll()
	}
}

package binder

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/volume"
)

// register adds the informer handlers. A claim change syncs the claim and
// the volume it names; a volume change syncs the volume and its claim, and
// an unclaimed volume wakes the Pending claims (one of them may fit) and
// those that name it (they may have come first); a
// StorageClass change wakes the Pending claims of that class, and of no
// class when it is the default.
func (r *reconciler) register(enqueue func(controllers.Request)) {
	volumeKey := func(name string) controllers.Request { return controllers.Request{Name: name} }
	claimChanged := func(c *corev1.PersistentVolumeClaim) {
		enqueue(controllers.KeyOf(c))
		if c.Spec.VolumeName != "" {
			enqueue(volumeKey(c.Spec.VolumeName))
		}
	}
	r.claims.AddHandler(informer.HandlerFuncs[*corev1.PersistentVolumeClaim]{
		AddFunc:    claimChanged,
		UpdateFunc: func(_, c *corev1.PersistentVolumeClaim) { claimChanged(c) },
		DeleteFunc: func(c *corev1.PersistentVolumeClaim) {
			if c.Spec.VolumeName != "" {
				enqueue(volumeKey(c.Spec.VolumeName))
			}
			for _, pv := range r.volumes.List() {
				if ref := pv.Spec.ClaimRef; ref != nil && ref.Namespace == c.Namespace && ref.Name == c.Name {
					enqueue(volumeKey(pv.Name))
				}
			}
		},
	})
	volumeChanged := func(pv *corev1.PersistentVolume) {
		enqueue(volumeKey(pv.Name))
		if ref := pv.Spec.ClaimRef; ref != nil {
			enqueue(controllers.Request{Namespace: ref.Namespace, Name: ref.Name})
			return
		}
		r.enqueuePending(enqueue, func(*corev1.PersistentVolumeClaim) bool { return true })
		// A claim that names this volume may have come before it (the
		// two caches are fed apart): it waits for the volume to appear.
		for _, c := range r.claims.List() {
			if c.Spec.VolumeName == pv.Name && c.DeletionTimestamp == nil {
				enqueue(controllers.KeyOf(c))
			}
		}
	}
	r.volumes.AddHandler(informer.HandlerFuncs[*corev1.PersistentVolume]{
		AddFunc:    volumeChanged,
		UpdateFunc: func(_, pv *corev1.PersistentVolume) { volumeChanged(pv) },
		DeleteFunc: func(pv *corev1.PersistentVolume) {
			if ref := pv.Spec.ClaimRef; ref != nil {
				enqueue(controllers.Request{Namespace: ref.Namespace, Name: ref.Name})
			}
		},
	})
	classChanged := func(sc *storagev1.StorageClass) {
		def := volume.IsDefaultClass(sc)
		r.enqueuePending(enqueue, func(c *corev1.PersistentVolumeClaim) bool {
			class := volume.ClaimClass(c)
			return class == sc.Name || def && c.Spec.StorageClassName == nil && class == ""
		})
	}
	r.classes.AddHandler(informer.HandlerFuncs[*storagev1.StorageClass]{
		AddFunc:    classChanged,
		UpdateFunc: func(_, sc *storagev1.StorageClass) { classChanged(sc) },
	})
}

// enqueuePending enqueues the unbound claims keep selects.
func (r *reconciler) enqueuePending(enqueue func(controllers.Request), keep func(*corev1.PersistentVolumeClaim) bool) {
	for _, c := range r.claims.List() {
		if c.Spec.VolumeName == "" && c.DeletionTimestamp == nil && keep(c) {
			enqueue(controllers.KeyOf(c))
		}
	}
}

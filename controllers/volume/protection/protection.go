// Package protection keeps storage in use from being deleted: the
// pvc-protection and pv-protection controllers, as upstream's. Every claim
// carries the kubernetes.io/pvc-protection finalizer and every volume
// kubernetes.io/pv-protection; a claim being deleted loses its finalizer
// (and goes) only once no running pod uses it, a volume only once it is no
// longer Bound.
//
// InUse is the pure decision; Reconcile reads the caches and writes
// through the API. The StorageObjectInUseProtection admission plugin adds
// the finalizers at creation; the controllers add any that are missing.
package protection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/volume"
)

// The controllers' names (for --controllers and logs), upstream's.
const (
	ClaimsName  = "pvc-protection"
	VolumesName = "pv-protection"
)

// Config configures the controllers.
type Config struct {
	Client kubernetes.Interface
	// Claims and Pods serve pvc-protection, Volumes pv-protection.
	Claims  volume.Lister[*corev1.PersistentVolumeClaim]
	Volumes volume.Lister[*corev1.PersistentVolume]
	Pods    volume.Lister[*corev1.Pod]
	Logger  *slog.Logger
}

func (c *Config) validate(claims bool) error {
	switch {
	case c.Client == nil:
		return errors.New("protection: Client is required")
	case claims && (c.Claims == nil || c.Pods == nil):
		return errors.New("protection: the Claims and Pods informers are required")
	case !claims && c.Volumes == nil:
		return errors.New("protection: the Volumes informer is required")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// NewClaims builds pvc-protection and registers its handlers on the
// informers (call it before the informers run).
func NewClaims(cfg Config) (*controllers.Controller, error) {
	return newController(cfg, true)
}

// NewVolumes builds pv-protection and registers its handlers on the
// informers (call it before the informers run).
func NewVolumes(cfg Config) (*controllers.Controller, error) {
	return newController(cfg, false)
}

func newController(cfg Config, claims bool) (*controllers.Controller, error) {
	if err := cfg.validate(claims); err != nil {
		return nil, err
	}
	name := VolumesName
	if claims {
		name = ClaimsName
	}
	r := &reconciler{cfg: cfg, log: cfg.Logger.With("controller", name)}
	c := controllers.New(name, r, controllers.Options{Workers: 2, Logger: cfg.Logger})
	if claims {
		r.registerClaims(c.Enqueue)
	} else {
		r.registerVolumes(c.Enqueue)
	}
	return c, nil
}

type reconciler struct {
	cfg Config
	log *slog.Logger
}

var _ controllers.Reconciler = (*reconciler)(nil)

// InUse reports whether any of pods keeps claim from going: a pod
// scheduled to a node that mounts it and has neither finished (Succeeded,
// Failed) nor been shut down by its kubelet (deleted with grace 0).
func InUse(claim *corev1.PersistentVolumeClaim, pods []*corev1.Pod) bool {
	for _, p := range pods {
		if p.Namespace != claim.Namespace || p.Spec.NodeName == "" || terminated(p) {
			continue
		}
		if slices.Contains(volume.PodClaims(p), claim.Name) {
			return true
		}
	}
	return false
}

func terminated(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	return p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0
}

// registerVolumes: a volume syncs on every change.
func (r *reconciler) registerVolumes(enqueue func(controllers.Request)) {
	r.cfg.Volumes.AddHandler(informer.HandlerFuncs[*corev1.PersistentVolume]{
		AddFunc:    func(pv *corev1.PersistentVolume) { enqueue(controllers.KeyOf(pv)) },
		UpdateFunc: func(_, pv *corev1.PersistentVolume) { enqueue(controllers.KeyOf(pv)) },
	})
}

// registerClaims: a claim syncs on every change; a pod's change syncs the
// claims it uses that are being deleted (its end may free them).
func (r *reconciler) registerClaims(enqueue func(controllers.Request)) {
	r.cfg.Claims.AddHandler(informer.HandlerFuncs[*corev1.PersistentVolumeClaim]{
		AddFunc:    func(c *corev1.PersistentVolumeClaim) { enqueue(controllers.KeyOf(c)) },
		UpdateFunc: func(_, c *corev1.PersistentVolumeClaim) { enqueue(controllers.KeyOf(c)) },
	})
	pod := func(p *corev1.Pod) {
		for _, name := range volume.PodClaims(p) {
			if c, ok := r.cfg.Claims.Get(p.Namespace, name); ok && c.DeletionTimestamp != nil {
				enqueue(controllers.KeyOf(c))
			}
		}
	}
	r.cfg.Pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{
		AddFunc:    pod,
		UpdateFunc: func(_, p *corev1.Pod) { pod(p) },
		DeleteFunc: pod,
	})
}

// Reconcile adds or removes the protection finalizer of the claim (a key
// with a namespace, pvc-protection's) or volume (pv-protection's) req
// names.
func (r *reconciler) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	var err error
	if req.Namespace == "" {
		err = r.syncVolume(ctx, req.Name)
	} else {
		err = r.syncClaim(ctx, req.Namespace, req.Name)
	}
	if apierrors.IsNotFound(err) {
		err = nil // deleted meanwhile
	}
	return controllers.Result{}, err
}

func (r *reconciler) syncClaim(ctx context.Context, namespace, name string) error {
	c, ok := r.cfg.Claims.Get(namespace, name)
	if !ok {
		return nil
	}
	has := volume.HasFinalizer(c.Finalizers, volume.PVCProtectionFinalizer)
	claims := r.cfg.Client.CoreV1().PersistentVolumeClaims(namespace)
	switch {
	case c.DeletionTimestamp == nil && !has:
		c = c.DeepCopy()
		c.Finalizers = append(c.Finalizers, volume.PVCProtectionFinalizer)
		if _, err := claims.Update(ctx, c, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("adding the finalizer of claim %s/%s: %w", namespace, name, err)
		}
	case c.DeletionTimestamp != nil && has:
		if InUse(c, r.cfg.Pods.ListNamespace(namespace)) {
			return nil // the pod's end enqueues the claim again
		}
		// The cache may lag a pod created a moment ago: ask the API server.
		list, err := r.cfg.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing the pods of %s: %w", namespace, err)
		}
		pods := make([]*corev1.Pod, len(list.Items))
		for i := range list.Items {
			pods[i] = &list.Items[i]
		}
		if InUse(c, pods) {
			return nil
		}
		c = c.DeepCopy()
		c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == volume.PVCProtectionFinalizer })
		if _, err := claims.Update(ctx, c, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("removing the finalizer of claim %s/%s: %w", namespace, name, err)
		}
		r.log.Info("claim no longer in use: finalizer removed", "claim", namespace+"/"+name)
	}
	return nil
}

func (r *reconciler) syncVolume(ctx context.Context, name string) error {
	pv, ok := r.cfg.Volumes.Get("", name)
	if !ok {
		return nil
	}
	has := volume.HasFinalizer(pv.Finalizers, volume.PVProtectionFinalizer)
	pvs := r.cfg.Client.CoreV1().PersistentVolumes()
	switch {
	case pv.DeletionTimestamp == nil && !has:
		pv = pv.DeepCopy()
		pv.Finalizers = append(pv.Finalizers, volume.PVProtectionFinalizer)
		if _, err := pvs.Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("adding the finalizer of volume %s: %w", name, err)
		}
	case pv.DeletionTimestamp != nil && has && pv.Status.Phase != corev1.VolumeBound:
		pv = pv.DeepCopy()
		pv.Finalizers = slices.DeleteFunc(pv.Finalizers, func(f string) bool { return f == volume.PVProtectionFinalizer })
		if _, err := pvs.Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("removing the finalizer of volume %s: %w", name, err)
		}
	}
	return nil
}

// Package binder is the PersistentVolume controller's binding half, as
// upstream's persistentvolume-binder: it binds each PersistentVolumeClaim
// to a matching PersistentVolume (or waits for the first consumer, or asks
// the class's provisioner for one), keeps both objects' phases, gives
// class-less claims the default StorageClass, and reclaims a volume whose
// claim is gone by its reclaim policy (Retain keeps it Released; Delete
// deletes the object).
//
// The decisions are pure functions (match.go, plan.go); Reconcile reads the
// bus-fed caches and applies them through the API. One queue holds both
// kinds: a key with a namespace is a claim, one without is a volume.
package binder

import (
	"errors"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/volume"
)

// Name is the controller's name (for --controllers and logs), upstream's.
const Name = "persistentvolume-binder"

// Config configures the controller.
type Config struct {
	Client  kubernetes.Interface
	Volumes volume.Lister[*corev1.PersistentVolume]
	Claims  volume.Lister[*corev1.PersistentVolumeClaim]
	Classes volume.Lister[*storagev1.StorageClass]
	// Nodes resolves a claim's selected-node annotation for node affinity.
	Nodes volume.Lister[*corev1.Node]
	// Recorder records FailedBinding, WaitForFirstConsumer,
	// ExternalProvisioning, ClaimLost... (upstream's component is
	// "persistentvolume-controller").
	Recorder record.EventRecorder
	Logger   *slog.Logger
	// Workers is the number of objects synced at once (default 2).
	Workers int
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("binder: Client is required")
	case c.Volumes == nil || c.Claims == nil || c.Classes == nil || c.Nodes == nil:
		return errors.New("binder: the Volumes, Claims, Classes and Nodes informers are required")
	case c.Recorder == nil:
		return errors.New("binder: Recorder is required")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Workers <= 0 {
		c.Workers = 2
	}
	return nil
}

// New builds the controller and registers its handlers on the informers
// (call it before the informers run).
func New(cfg Config) (*controllers.Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := newReconciler(cfg)
	c := controllers.New(Name, r, controllers.Options{Workers: cfg.Workers, Logger: cfg.Logger})
	r.register(c.Enqueue)
	return c, nil
}

func newReconciler(cfg Config) *reconciler {
	return &reconciler{client: cfg.Client, volumes: cfg.Volumes, claims: cfg.Claims, classes: cfg.Classes, nodes: cfg.Nodes,
		rec: cfg.Recorder, log: cfg.Logger.With("controller", Name)}
}

// reconciler syncs one claim or volume per call.
type reconciler struct {
	client  kubernetes.Interface
	volumes volume.Lister[*corev1.PersistentVolume]
	claims  volume.Lister[*corev1.PersistentVolumeClaim]
	classes volume.Lister[*storagev1.StorageClass]
	nodes   volume.Lister[*corev1.Node]
	rec     record.EventRecorder
	log     *slog.Logger
}

var _ controllers.Reconciler = (*reconciler)(nil)

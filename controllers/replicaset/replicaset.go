// Package replicaset is the ReplicaSet controller: it keeps the number of
// active pods a ReplicaSet controls equal to spec.replicas, creating pods
// from its template in slow-start batches and deleting the least valuable
// first, adopts matching orphans, releases pods whose labels stop matching,
// and reports the counts in the ReplicaSet's status.
//
// The decisions are pure functions of a ReplicaSet and its pods (plan.go,
// status.go, with the ownership decisions of package claim); Reconcile reads the bus-fed caches, applies the plan
// through the API and records Events. Creations and deletions in flight are
// remembered per ReplicaSet (package expectations) until the cache shows them, so
// a sync that runs before the cache caught up never creates twice.
package replicaset

import (
	"errors"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/expectations"
)

// Name is the controller's name (for --controllers and logs).
const Name = "replicaset"

// controllerKind is the kind in the owner references the controller writes.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// DefaultBurstReplicas bounds the pods created or deleted in one sync, as upstream.
const DefaultBurstReplicas = 500

// PodInformer is where the controller reads pods: cache.Informers.Pods,
// which carries the cache.ByOwnerUID and cache.ByOrphanNamespace indexes.
type PodInformer interface {
	ByIndex(index, value string) []*corev1.Pod
	AddHandler(h informer.Handler[*corev1.Pod])
}

// ReplicaSetInformer is where the controller reads ReplicaSets:
// cache.Informers.ReplicaSets.
type ReplicaSetInformer interface {
	Get(namespace, name string) (*appsv1.ReplicaSet, bool)
	ListNamespace(namespace string) []*appsv1.ReplicaSet
	AddHandler(h informer.Handler[*appsv1.ReplicaSet])
}

// The shared informers satisfy these interfaces.
var (
	_ PodInformer        = (*informer.Informer[*corev1.Pod])(nil)
	_ ReplicaSetInformer = (*informer.Informer[*appsv1.ReplicaSet])(nil)
)

// Config configures the controller.
type Config struct {
	// Client makes every write (pods, ReplicaSet status, Events go through
	// Recorder).
	Client      kubernetes.Interface
	Pods        PodInformer
	ReplicaSets ReplicaSetInformer
	// Recorder records SuccessfulCreate, SuccessfulDelete, FailedCreate and
	// FailedDelete on the ReplicaSet.
	Recorder record.EventRecorder
	Logger   *slog.Logger
	// Workers is the number of ReplicaSets synced at once (default 5).
	Workers int
	// BurstReplicas bounds creations or deletions per sync (default 500).
	BurstReplicas int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("replicaset: Client is required")
	case c.Pods == nil || c.ReplicaSets == nil:
		return errors.New("replicaset: the Pods and ReplicaSets informers are required")
	case c.Recorder == nil:
		return errors.New("replicaset: Recorder is required")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Workers <= 0 {
		c.Workers = 5
	}
	if c.BurstReplicas <= 0 {
		c.BurstReplicas = DefaultBurstReplicas
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// New builds the controller and registers its handlers on the informers
// (call it before the informers run). Add the controller to a
// controllers.Manager together with the informers.
func New(cfg Config) (*controllers.Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := newReconciler(cfg, clientWriters(cfg.Client))
	c := controllers.New(Name, r, controllers.Options{Workers: cfg.Workers, Logger: cfg.Logger})
	r.register(c.Enqueue)
	return c, nil
}

func newReconciler(cfg Config, w writers) *reconciler {
	return &reconciler{
		pods: cfg.Pods, rsets: cfg.ReplicaSets, w: w, rec: cfg.Recorder,
		log: cfg.Logger.With("controller", Name), burst: cfg.BurstReplicas, now: cfg.Now,
		exp: expectations.New(cfg.Now, expectations.DefaultTTL),
	}
}

// reconciler syncs one ReplicaSet per call.
type reconciler struct {
	pods  PodInformer
	rsets ReplicaSetInformer
	w     writers
	rec   record.EventRecorder
	log   *slog.Logger
	burst int
	now   func() time.Time
	exp   *expectations.Expectations
}

var _ controllers.Reconciler = (*reconciler)(nil)

// Package deployment is the Deployment controller: it rolls a Deployment's
// pod template out through ReplicaSets. The ReplicaSet whose template
// matches the Deployment's is the new one (created on demand, named
// "<deployment>-<pod-template-hash>"); the others are old. A RollingUpdate
// grows the new ReplicaSet and shrinks the old ones within maxSurge and
// maxUnavailable; a Recreate scales the old ones to zero, waits for their
// pods to go, then scales the new one up. A paused Deployment only scales.
// Replica changes mid-rollout are spread over the ReplicaSets in proportion.
// Revisions, conditions (Progressing, Available) and status are kept the way
// kubectl rollout status|history|undo|pause|resume expect.
//
// The decisions are pure functions of a Deployment and its ReplicaSets
// (rolling.go, scale.go, status.go, replicasets.go); Reconcile reads the
// bus-fed caches and applies them through the API, one step per sync: each
// write changes a ReplicaSet or the Deployment, whose event brings the next
// sync. ReplicaSet writes are pinned to the cached resourceVersion, so a
// decision made on a stale cache conflicts instead of landing.
package deployment

import (
	"errors"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

// Name is the controller's name (for --controllers and logs).
const Name = "deployment"

// DeploymentInformer is where the controller reads Deployments:
// cache.Informers.Deployments.
type DeploymentInformer interface {
	Get(namespace, name string) (*appsv1.Deployment, bool)
	ListNamespace(namespace string) []*appsv1.Deployment
	AddHandler(h informer.Handler[*appsv1.Deployment])
}

// ReplicaSetInformer is where the controller reads ReplicaSets:
// cache.Informers.ReplicaSets, with the cache.ByOwnerUID index.
type ReplicaSetInformer interface {
	Get(namespace, name string) (*appsv1.ReplicaSet, bool)
	ByIndex(index, value string) []*appsv1.ReplicaSet
	ByLabels(sel labels.Selector) []*appsv1.ReplicaSet
	AddHandler(h informer.Handler[*appsv1.ReplicaSet])
}

// PodInformer is where the controller reads pods (a Recreate waits for the
// old pods to go): cache.Informers.Pods, with the cache.ByOwnerUID index.
type PodInformer interface {
	ByIndex(index, value string) []*corev1.Pod
	AddHandler(h informer.Handler[*corev1.Pod])
}

// The shared informers satisfy these interfaces.
var (
	_ DeploymentInformer = (*informer.Informer[*appsv1.Deployment])(nil)
	_ ReplicaSetInformer = (*informer.Informer[*appsv1.ReplicaSet])(nil)
	_ PodInformer        = (*informer.Informer[*corev1.Pod])(nil)
)

// Config configures the controller.
type Config struct {
	// Client makes every write (ReplicaSets, Deployment status and
	// revision annotation).
	Client      kubernetes.Interface
	Deployments DeploymentInformer
	ReplicaSets ReplicaSetInformer
	Pods        PodInformer
	// Recorder records ScalingReplicaSet (and failures) on the Deployment.
	Recorder record.EventRecorder
	Logger   *slog.Logger
	// Workers is the number of Deployments synced at once (default 5).
	Workers int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("deployment: Client is required")
	case c.Deployments == nil || c.ReplicaSets == nil || c.Pods == nil:
		return errors.New("deployment: the Deployments, ReplicaSets and Pods informers are required")
	case c.Recorder == nil:
		return errors.New("deployment: Recorder is required")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Workers <= 0 {
		c.Workers = 5
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
		deps: cfg.Deployments, rsets: cfg.ReplicaSets, pods: cfg.Pods, w: w, rec: cfg.Recorder,
		log: cfg.Logger.With("controller", Name), now: cfg.Now,
	}
}

// reconciler syncs one Deployment per call.
type reconciler struct {
	deps  DeploymentInformer
	rsets ReplicaSetInformer
	pods  PodInformer
	w     writers
	rec   record.EventRecorder
	log   *slog.Logger
	now   func() time.Time
}

var _ controllers.Reconciler = (*reconciler)(nil)

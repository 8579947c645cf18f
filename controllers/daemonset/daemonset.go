// Package daemonset is the DaemonSet controller: it keeps one pod of each
// DaemonSet on every node the DaemonSet's node selector, node affinity and
// tolerations admit, removes the pods of nodes that are gone or no longer
// eligible, rolls template changes out (RollingUpdate with maxUnavailable
// or maxSurge, or OnDelete), keeps the template history as
// ControllerRevisions and reports the counts in the DaemonSet's status.
//
// As upstream, the controller does not bind pods itself: each pod it makes
// carries a required node affinity on matchFields metadata.name naming its
// node, and the scheduler binds it there.
//
// The decisions are pure functions of a DaemonSet, the nodes and the
// DaemonSet's pods grouped by node (eligible.go, plan.go, status.go);
// Reconcile reads the bus-fed caches, applies the plan through the API and
// records Events (sync.go). A DaemonSet's pods are found through the pod
// cache's owner index, so a sync costs O(nodes + its pods).
package daemonset

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
	"github.com/kubebus/kubebus/controllers/history"
	"github.com/kubebus/kubebus/controllers/podwrite"
)

// Name is the controller's name (for --controllers and logs).
const Name = "daemonset"

// DefaultBurstReplicas bounds the pods created in one sync, as upstream.
const DefaultBurstReplicas = 250

// controllerKind is the kind in the owner references the controller writes.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// PodInformer is where the controller reads pods: cache.Informers.Pods,
// which carries the cache.ByOwnerUID and cache.ByOrphanNamespace indexes.
type PodInformer interface {
	ByIndex(index, value string) []*corev1.Pod
	AddHandler(h informer.Handler[*corev1.Pod])
}

// NodeInformer is where the controller reads nodes: cache.Informers.Nodes.
type NodeInformer interface {
	List() []*corev1.Node
	AddHandler(h informer.Handler[*corev1.Node])
}

// DaemonSetInformer is where the controller reads DaemonSets:
// cache.Informers.DaemonSets.
type DaemonSetInformer interface {
	Get(namespace, name string) (*appsv1.DaemonSet, bool)
	List() []*appsv1.DaemonSet
	ListNamespace(namespace string) []*appsv1.DaemonSet
	AddHandler(h informer.Handler[*appsv1.DaemonSet])
}

// RevisionInformer is where the controller reads ControllerRevisions:
// cache.Informers.ControllerRevisions (indexed by cache.ByOwnerUID).
type RevisionInformer interface {
	ByIndex(index, value string) []*appsv1.ControllerRevision
	AddHandler(h informer.Handler[*appsv1.ControllerRevision])
}

// The shared informers satisfy these interfaces.
var (
	_ PodInformer       = (*informer.Informer[*corev1.Pod])(nil)
	_ NodeInformer      = (*informer.Informer[*corev1.Node])(nil)
	_ DaemonSetInformer = (*informer.Informer[*appsv1.DaemonSet])(nil)
	_ RevisionInformer  = (*informer.Informer[*appsv1.ControllerRevision])(nil)
)

// Config configures the controller.
type Config struct {
	// Client makes every write (pods, ControllerRevisions, DaemonSet
	// status; Events go through Recorder).
	Client     kubernetes.Interface
	Pods       PodInformer
	Nodes      NodeInformer
	DaemonSets DaemonSetInformer
	Revisions  RevisionInformer
	// Recorder records SuccessfulCreate, SuccessfulDelete, FailedCreate,
	// FailedDelete, FailedDaemonPod and SelectingAll on the DaemonSet.
	Recorder record.EventRecorder
	Logger   *slog.Logger
	// Workers is the number of DaemonSets synced at once (default 2, as
	// upstream's --concurrent-daemonset-syncs).
	Workers int
	// BurstReplicas bounds creations per sync (default 250).
	BurstReplicas int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("daemonset: Client is required")
	case c.Pods == nil || c.Nodes == nil || c.DaemonSets == nil || c.Revisions == nil:
		return errors.New("daemonset: the Pods, Nodes, DaemonSets and Revisions informers are required")
	case c.Recorder == nil:
		return errors.New("daemonset: Recorder is required")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Workers <= 0 {
		c.Workers = 2
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
		pods: cfg.Pods, nodes: cfg.Nodes, dsets: cfg.DaemonSets, revs: cfg.Revisions, w: w, rec: cfg.Recorder,
		log: cfg.Logger.With("controller", Name), burst: cfg.BurstReplicas, now: cfg.Now,
		exp: expectations.New(cfg.Now, expectations.DefaultTTL), backoff: newFailedBackoff(),
	}
}

// reconciler syncs one DaemonSet per call.
type reconciler struct {
	pods  PodInformer
	nodes NodeInformer
	dsets DaemonSetInformer
	revs  RevisionInformer
	w     writers
	rec   record.EventRecorder
	log   *slog.Logger
	burst int
	now   func() time.Time
	exp   *expectations.Expectations
	// backoff paces the replacement of failed pods.
	backoff *failedBackoff
}

var _ controllers.Reconciler = (*reconciler)(nil)

// writers are the API writes, behind interfaces the unit tests fake.
type writers struct {
	pods  podwrite.Writer
	dsets dsWriter
	revs  history.Client
}

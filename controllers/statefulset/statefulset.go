// Package statefulset is the apps/v1 StatefulSet controller: it runs pods
// with stable identities (<set>-<ordinal>, a hostname under the governing
// Service) and stable storage (one PersistentVolumeClaim per claim template
// and ordinal, kept across the pod's restarts), created in ordinal order
// and deleted in reverse under OrderedReady, or all at once under
// Parallel; it rolls template changes out from the highest ordinal down to
// the partition (RollingUpdate) or leaves that to whoever deletes the pods
// (OnDelete), and records every template as a ControllerRevision (package
// history) that kubectl rollout history and undo read.
//
// The decisions are pure functions of the set, its revisions, pods and
// claims (plan.go, revisions.go, claims.go, pods.go); Reconcile reads the
// bus-fed caches, records the update revision, applies the plan through the
// API, writes the status and prunes old revisions.
package statefulset

import (
	"errors"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/history"
)

// Name is the controller's name (for --controllers and logs).
const Name = "statefulset"

// Event reasons, as upstream.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedDelete     = "FailedDelete"
	ReasonSuccessfulUpdate = "SuccessfulUpdate"
	ReasonFailedUpdate     = "FailedUpdate"
)

// Source is the read side of a shared cache (cache.Informers fields).
type Source[T runtime.Object] interface {
	Get(namespace, name string) (T, bool)
	ListNamespace(namespace string) []T
	ByIndex(index, value string) []T
	AddHandler(h informer.Handler[T])
}

// The shared informers satisfy Source.
var (
	_ Source[*appsv1.StatefulSet]           = (*informer.Informer[*appsv1.StatefulSet])(nil)
	_ Source[*corev1.Pod]                   = (*informer.Informer[*corev1.Pod])(nil)
	_ Source[*appsv1.ControllerRevision]    = (*informer.Informer[*appsv1.ControllerRevision])(nil)
	_ Source[*corev1.PersistentVolumeClaim] = (*informer.Informer[*corev1.PersistentVolumeClaim])(nil)
)

// Config configures the controller.
type Config struct {
	// Client makes every write: pods, claims, revisions, the set's status
	// (Events go through Recorder).
	Client kubernetes.Interface
	// StatefulSets, Pods (with the cache.ByOwnerUID and
	// cache.ByOrphanNamespace indexes), ControllerRevisions (with
	// cache.ByOwnerUID) and PersistentVolumeClaims: the shared caches.
	StatefulSets           Source[*appsv1.StatefulSet]
	Pods                   Source[*corev1.Pod]
	ControllerRevisions    Source[*appsv1.ControllerRevision]
	PersistentVolumeClaims Source[*corev1.PersistentVolumeClaim]
	// Recorder records the pod and claim Events on the set.
	Recorder record.EventRecorder
	Logger   *slog.Logger
	// Workers is the number of sets synced at once (default 5).
	Workers int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("statefulset: Client is required")
	case c.StatefulSets == nil || c.Pods == nil || c.ControllerRevisions == nil || c.PersistentVolumeClaims == nil:
		return errors.New("statefulset: the StatefulSets, Pods, ControllerRevisions and PersistentVolumeClaims informers are required")
	case c.Recorder == nil:
		return errors.New("statefulset: Recorder is required")
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
	return &reconciler{
		client: cfg.Client, hist: history.NewClient(cfg.Client),
		sets: cfg.StatefulSets, pods: cfg.Pods, revs: cfg.ControllerRevisions, claims: cfg.PersistentVolumeClaims,
		rec: cfg.Recorder, log: cfg.Logger.With("controller", Name), now: cfg.Now,
	}
}

// reconciler syncs one StatefulSet per call.
type reconciler struct {
	client kubernetes.Interface
	hist   history.Client
	sets   Source[*appsv1.StatefulSet]
	pods   Source[*corev1.Pod]
	revs   Source[*appsv1.ControllerRevision]
	claims Source[*corev1.PersistentVolumeClaim]
	rec    record.EventRecorder
	log    *slog.Logger
	now    func() time.Time
}

var _ controllers.Reconciler = (*reconciler)(nil)

// Package job is the batch/v1 Job controller: it runs a Job's pods until
// enough of them succeed (completions, at most parallelism at a time, each
// completion index once for an Indexed Job), or the Job fails (backoffLimit
// with exponential back-off, the pod failure policy, activeDeadlineSeconds,
// per-index limits), deletes the pods of a suspended Job and reports it all
// in the Job's status and conditions, as upstream's Job controller does.
//
// Pods are tracked with upstream's finalizer scheme (track.go): each pod
// carries batch.kubernetes.io/job-tracking until its outcome is recorded
// in the Job's status, so no pod is counted twice or lost, across
// controller restarts too. The decisions are pure functions of a Job and
// its pods (plan.go, track.go, policy.go); Reconcile (sync.go) reads the
// bus-fed caches, applies them through the API and records Events.
package job

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/expectations"
)

// Name is the controller's name (for --controllers and logs).
const Name = "job"

// controllerKind is the kind in the owner references the controller writes.
var controllerKind = batchv1.SchemeGroupVersion.WithKind("Job")

// Upstream's pod failure back-off: 10s, doubling per consecutive failure,
// capped at six minutes (as documented for backoffLimit).
const (
	DefaultPodFailureBackoff    = 10 * time.Second
	DefaultMaxPodFailureBackoff = 6 * time.Minute
	// DefaultBatchPeriod delays a sync after a pod or status change so one
	// sync handles a burst of them, as upstream.
	DefaultBatchPeriod = time.Second
)

// PodInformer is where the controller reads pods: cache.Informers.Pods
// (indexes cache.ByOwnerUID and cache.ByOrphanNamespace).
type PodInformer interface {
	Get(namespace, name string) (*corev1.Pod, bool)
	ByIndex(index, value string) []*corev1.Pod
	AddHandler(h informer.Handler[*corev1.Pod])
}

// JobInformer is where the controller reads Jobs: cache.Informers.Jobs.
type JobInformer interface {
	Get(namespace, name string) (*batchv1.Job, bool)
	ListNamespace(namespace string) []*batchv1.Job
	AddHandler(h informer.Handler[*batchv1.Job])
}

var (
	_ PodInformer = (*informer.Informer[*corev1.Pod])(nil)
	_ JobInformer = (*informer.Informer[*batchv1.Job])(nil)
)

// Config configures the controller.
type Config struct {
	Client kubernetes.Interface
	Pods   PodInformer
	Jobs   JobInformer
	// Recorder records SuccessfulCreate, FailedCreate, SuccessfulDelete,
	// Completed, BackoffLimitExceeded (and the other failure reasons),
	// Suspended and Resumed on the Job.
	Recorder record.EventRecorder
	Logger   *slog.Logger
	// Workers is the number of Jobs synced at once (default 5).
	Workers int
	// PodFailureBackoff and MaxPodFailureBackoff pace pod re-creation
	// after failures (defaults DefaultPodFailureBackoff and
	// DefaultMaxPodFailureBackoff).
	PodFailureBackoff, MaxPodFailureBackoff time.Duration
	// BatchPeriod (default DefaultBatchPeriod).
	BatchPeriod time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("job: Client is required")
	case c.Pods == nil || c.Jobs == nil:
		return errors.New("job: the Pods and Jobs informers are required")
	case c.Recorder == nil:
		return errors.New("job: Recorder is required")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Workers <= 0 {
		c.Workers = 5
	}
	if c.PodFailureBackoff <= 0 {
		c.PodFailureBackoff = DefaultPodFailureBackoff
	}
	if c.MaxPodFailureBackoff <= 0 {
		c.MaxPodFailureBackoff = DefaultMaxPodFailureBackoff
	}
	if c.BatchPeriod <= 0 {
		c.BatchPeriod = DefaultBatchPeriod
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// Controller is the Job controller: one queue of Jobs, one of orphaned
// pods whose tracking finalizer must go.
type Controller struct {
	jobs, orphans *controllers.Controller
}

// New builds the controller and registers its handlers on the informers
// (call it before the informers run).
func New(cfg Config) (*Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := newReconciler(cfg, clientWriters(cfg.Client))
	jobs := controllers.New(Name, r, controllers.Options{Workers: cfg.Workers, Logger: cfg.Logger})
	orphans := controllers.New(Name+"-orphan-pods", controllers.ReconcileFunc(r.syncOrphan), controllers.Options{Workers: 1, Logger: cfg.Logger})
	r.register(jobs.Enqueue, jobs.EnqueueAfter, orphans.Enqueue)
	return &Controller{jobs: jobs, orphans: orphans}, nil
}

// Run runs both queues until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.jobs.Run(ctx) }()
	go func() { defer wg.Done(); c.orphans.Run(ctx) }()
	wg.Wait()
}

func newReconciler(cfg Config, w writers) *reconciler {
	return &reconciler{
		pods: cfg.Pods, jobs: cfg.Jobs, w: w, rec: cfg.Recorder, log: cfg.Logger.With("controller", Name),
		now: cfg.Now, base: cfg.PodFailureBackoff, maxBackoff: cfg.MaxPodFailureBackoff, batch: cfg.BatchPeriod,
		exp: expectations.New(cfg.Now, expectations.DefaultTTL), fin: newFinalizerExpectations(), backoff: map[string]backoffRecord{}, written: map[string]int64{},
	}
}

// reconciler syncs one Job per call.
type reconciler struct {
	pods       PodInformer
	jobs       JobInformer
	w          writers
	rec        record.EventRecorder
	log        *slog.Logger
	now        func() time.Time
	base       time.Duration
	maxBackoff time.Duration
	batch      time.Duration
	exp        *expectations.Expectations
	fin        *finalizerExpectations

	mu sync.Mutex
	// backoff per Job key.
	backoff map[string]backoffRecord
	// written is the resourceVersion of this controller's last status
	// write per Job key: a cached Job older than that is stale.
	written map[string]int64
	// enqueueOrphan queues a pod whose tracking finalizer no Job removes.
	enqueueOrphan func(controllers.Request)
}

var _ controllers.Reconciler = (*reconciler)(nil)

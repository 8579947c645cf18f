package cronjob

import (
	"errors"
	"log/slog"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

// Name is the controller's name (for --controllers and logs).
const Name = "cronjob"

// JobInformer is where the controller reads Jobs: cache.Informers.Jobs,
// which carries the cache.ByOwnerUID index.
type JobInformer interface {
	ByIndex(index, value string) []*batchv1.Job
	AddHandler(h informer.Handler[*batchv1.Job])
}

// CronJobInformer is where the controller reads CronJobs:
// cache.Informers.CronJobs.
type CronJobInformer interface {
	Get(namespace, name string) (*batchv1.CronJob, bool)
	AddHandler(h informer.Handler[*batchv1.CronJob])
}

// The shared informers satisfy these interfaces.
var (
	_ JobInformer     = (*informer.Informer[*batchv1.Job])(nil)
	_ CronJobInformer = (*informer.Informer[*batchv1.CronJob])(nil)
)

// Config configures the controller.
type Config struct {
	// Client makes every write: Jobs, CronJob status (Events go through
	// Recorder).
	Client   kubernetes.Interface
	Jobs     JobInformer
	CronJobs CronJobInformer
	// Recorder records the controller's Events on the CronJob
	// (SuccessfulCreate, SawCompletedJob, JobAlreadyActive, ...).
	Recorder record.EventRecorder
	Logger   *slog.Logger
	// Workers is the number of CronJobs synced at once (default 5).
	Workers int
	// Clock is the time schedules are judged against (default RealClock).
	Clock Clock
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("cronjob: Client is required")
	case c.Jobs == nil || c.CronJobs == nil:
		return errors.New("cronjob: the Jobs and CronJobs informers are required")
	case c.Recorder == nil:
		return errors.New("cronjob: Recorder is required")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Workers <= 0 {
		c.Workers = 5
	}
	if c.Clock == nil {
		c.Clock = RealClock{}
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
	r.register(c.Enqueue, c.EnqueueAfter)
	return c, nil
}

func newReconciler(cfg Config, w writers) *reconciler {
	return &reconciler{jobs: cfg.Jobs, cronJobs: cfg.CronJobs, w: w, rec: cfg.Recorder,
		log: cfg.Logger.With("controller", Name), clock: cfg.Clock}
}

// reconciler syncs one CronJob per call.
type reconciler struct {
	jobs     JobInformer
	cronJobs CronJobInformer
	w        writers
	rec      record.EventRecorder
	log      *slog.Logger
	clock    Clock
}

var _ controllers.Reconciler = (*reconciler)(nil)

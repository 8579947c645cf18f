// Package ttlafterfinished is the TTL-after-finished controller: it deletes
// a finished Job (Complete or Failed) ttlSecondsAfterFinished after it
// finished, with background propagation so the garbage collector removes
// its pods, as upstream.
//
// Expiry is a pure function of a Job and the time (Expiry); Reconcile
// reads the cache, re-reads the Job from the API server before deleting
// (its TTL may have changed) and deletes it with a UID precondition.
package ttlafterfinished

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

// Name is the controller's name (for --controllers and logs).
const Name = "ttl-after-finished"

// JobInformer is where the controller reads Jobs: cache.Informers.Jobs.
type JobInformer interface {
	Get(namespace, name string) (*batchv1.Job, bool)
	AddHandler(h informer.Handler[*batchv1.Job])
}

var _ JobInformer = (*informer.Informer[*batchv1.Job])(nil)

// Config configures the controller.
type Config struct {
	Client kubernetes.Interface
	Jobs   JobInformer
	Logger *slog.Logger
	// Workers is the number of Jobs handled at once (default 5).
	Workers int
	// Now is the clock (default time.Now); tests inject their own.
	Now func() time.Time
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("ttlafterfinished: Client is required")
	case c.Jobs == nil:
		return errors.New("ttlafterfinished: the Jobs informer is required")
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

// New builds the controller and registers its handler on the Jobs
// informer (call it before the informer runs).
func New(cfg Config) (*controllers.Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &reconciler{cfg: cfg, log: cfg.Logger.With("controller", Name)}
	c := controllers.New(Name, r, controllers.Options{Workers: cfg.Workers, Logger: cfg.Logger})
	enqueue := func(j *batchv1.Job) {
		if j.DeletionTimestamp == nil && j.Spec.TTLSecondsAfterFinished != nil && finishedAt(j) != nil {
			c.Enqueue(controllers.KeyOf(j))
		}
	}
	cfg.Jobs.AddHandler(informer.HandlerFuncs[*batchv1.Job]{
		AddFunc:    enqueue,
		UpdateFunc: func(_, j *batchv1.Job) { enqueue(j) },
	})
	return c, nil
}

type reconciler struct {
	cfg Config
	log *slog.Logger
}

// finishedAt returns when a Job finished: the transition time of its True
// Complete or Failed condition, nil when it has not finished.
func finishedAt(j *batchv1.Job) *time.Time {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			t := c.LastTransitionTime.Time
			return &t
		}
	}
	return nil
}

// Expiry returns when a Job is to be deleted, and false when never: it is
// not finished, has no TTL, or is being deleted already.
func Expiry(j *batchv1.Job) (time.Time, bool) {
	if j.DeletionTimestamp != nil || j.Spec.TTLSecondsAfterFinished == nil {
		return time.Time{}, false
	}
	at := finishedAt(j)
	if at == nil {
		return time.Time{}, false
	}
	return at.Add(time.Duration(*j.Spec.TTLSecondsAfterFinished) * time.Second), true
}

// Reconcile deletes the Job once it expired, or requeues it for then.
func (r *reconciler) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	j, ok := r.cfg.Jobs.Get(req.Namespace, req.Name)
	if !ok {
		return controllers.Result{}, nil
	}
	if left, due := r.due(j); !due {
		return controllers.Result{RequeueAfter: left}, nil
	}
	// The cache may lag: the TTL may have been changed or removed.
	jobs := r.cfg.Client.BatchV1().Jobs(j.Namespace)
	fresh, err := jobs.Get(ctx, j.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return controllers.Result{}, nil
	}
	if err != nil {
		return controllers.Result{}, fmt.Errorf("reading job %s: %w", req, err)
	}
	if fresh.UID != j.UID {
		return controllers.Result{}, nil
	}
	if left, due := r.due(fresh); !due {
		return controllers.Result{RequeueAfter: left}, nil
	}
	policy := metav1.DeletePropagationBackground
	uid := fresh.UID
	err = jobs.Delete(ctx, fresh.Name, metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &fresh.ResourceVersion}})
	if err != nil && !apierrors.IsNotFound(err) {
		return controllers.Result{}, fmt.Errorf("deleting expired job %s: %w", req, err)
	}
	r.log.Info("deleted finished job", "job", req.String(), "ttlSecondsAfterFinished", *fresh.Spec.TTLSecondsAfterFinished)
	return controllers.Result{}, nil
}

// due reports whether j expired, else how long until it does (zero when
// it never will).
func (r *reconciler) due(j *batchv1.Job) (time.Duration, bool) {
	at, ok := Expiry(j)
	if !ok {
		return 0, false
	}
	left := at.Sub(r.cfg.Now())
	return left, left <= 0
}

package controllers

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubebus/kubebus/internal/crash"
)

// Request names the object to reconcile.
type Request struct {
	Namespace, Name string
}

func (r Request) String() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// KeyOf returns the request for an object.
func KeyOf(obj runtime.Object) Request {
	m, err := meta.Accessor(obj)
	if err != nil {
		return Request{}
	}
	return Request{Namespace: m.GetNamespace(), Name: m.GetName()}
}

// Result tells the runner what to do after a successful reconcile.
type Result struct {
	// RequeueAfter, when positive, reconciles the key again after it.
	RequeueAfter time.Duration
}

// Reconciler brings one object's world to its desired state.
type Reconciler interface {
	Reconcile(ctx context.Context, req Request) (Result, error)
}

// ReconcileFunc adapts a function to Reconciler.
type ReconcileFunc func(ctx context.Context, req Request) (Result, error)

// Reconcile implements Reconciler.
func (f ReconcileFunc) Reconcile(ctx context.Context, req Request) (Result, error) {
	return f(ctx, req)
}

type terminalError struct{ err error }

func (e terminalError) Error() string { return e.err.Error() }
func (e terminalError) Unwrap() error { return e.err }

// Terminal marks an error that retrying cannot fix: the key is not requeued.
func Terminal(err error) error { return terminalError{err} }

// Controller runs a Reconciler over a work queue.
type Controller struct {
	Name       string
	reconciler Reconciler
	workers    int
	limiter    workqueue.TypedRateLimiter[Request]
	log        *slog.Logger

	mu    sync.Mutex
	queue workqueue.TypedRateLimitingInterface[Request]
}

// Options tune a Controller.
type Options struct {
	Workers int // default 2
	// RateLimiter defaults to per-item exponential backoff 5ms..1000s
	// combined with an overall 10 qps/100 burst bucket, as upstream.
	RateLimiter workqueue.TypedRateLimiter[Request]
	Logger      *slog.Logger
}

// New creates a controller.
func New(name string, r Reconciler, o Options) *Controller {
	if o.Workers == 0 {
		o.Workers = 2
	}
	if o.RateLimiter == nil {
		o.RateLimiter = workqueue.DefaultTypedControllerRateLimiter[Request]()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c := &Controller{Name: name, reconciler: r, workers: o.Workers, limiter: o.RateLimiter, log: o.Logger.With("controller", name)}
	c.queue = c.newQueue()
	return c
}

func (c *Controller) newQueue() workqueue.TypedRateLimitingInterface[Request] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(c.limiter, workqueue.TypedRateLimitingQueueConfig[Request]{Name: c.Name})
}

func (c *Controller) current() workqueue.TypedRateLimitingInterface[Request] {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queue
}

// Enqueue adds a key (deduplicated while queued).
func (c *Controller) Enqueue(req Request) { c.current().Add(req) }

// EnqueueAfter adds a key after a delay.
func (c *Controller) EnqueueAfter(req Request, d time.Duration) { c.current().AddAfter(req, d) }

// EnqueueObject adds the key of an object.
func (c *Controller) EnqueueObject(obj runtime.Object) { c.Enqueue(KeyOf(obj)) }

// Len is the number of queued keys.
func (c *Controller) Len() int { return c.current().Len() }

// Run processes the queue until ctx ends (one leadership term). It may be
// called again for the next term: while not running, keys keep queueing on
// a fresh queue, so a standby that takes over reconciles everything that
// changed while it waited.
func (c *Controller) Run(ctx context.Context) {
	q := c.current()
	var wg sync.WaitGroup
	for i := 0; i < c.workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.processNext(ctx, q) {
			}
		}()
	}
	<-ctx.Done()
	c.mu.Lock()
	c.queue = c.newQueue()
	c.mu.Unlock()
	q.ShutDown()
	wg.Wait()
}

func (c *Controller) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[Request]) bool {
	req, shutdown := q.Get()
	if shutdown {
		return false
	}
	defer q.Done(req)
	if ctx.Err() != nil {
		return false
	}
	res, err := c.reconcileSafely(ctx, req)
	switch {
	case err == nil:
		q.Forget(req)
		if res.RequeueAfter > 0 {
			q.AddAfter(req, res.RequeueAfter)
		}
	case errors.As(err, new(terminalError)):
		q.Forget(req)
		c.log.Warn("reconcile failed; not retrying", "key", req.String(), "err", err)
	default:
		if ctx.Err() == nil {
			c.log.Debug("reconcile failed; retrying", "key", req.String(), "err", err)
			q.AddRateLimited(req)
		} else {
			// The term ended mid-reconcile: the next term retries the key.
			c.Enqueue(req)
		}
	}
	return true
}

// reconcileSafely turns a panic in a reconciler into an error (logged with
// its stack and counted in kubebus_panics_total{component="controller"}),
// so the key is retried with backoff and the other keys go on.
func (c *Controller) reconcileSafely(ctx context.Context, req Request) (res Result, err error) {
	err = crash.Do(c.log, "controller", c.Name, req.String(), func() error {
		var rerr error
		res, rerr = c.reconciler.Reconcile(ctx, req)
		return rerr
	})
	return res, err
}

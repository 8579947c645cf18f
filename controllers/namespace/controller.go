package namespace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

// Event reasons.
const (
	// ReasonDeleteContentFailed: deleting a collection in the namespace failed.
	ReasonDeleteContentFailed = "NamespaceDeletionContentFailure"
	// ReasonFinalizeFailed: finalizing or deleting the emptied namespace failed.
	ReasonFinalizeFailed = "NamespaceFinalizeFailed"
)

// DefaultPollInterval is how often a terminating namespace is looked at
// again while content remains.
const DefaultPollInterval = time.Second

// Lister lists the cached metadata of one resource's objects in a
// namespace (*informer.Informer[*metav1.PartialObjectMetadata] is one).
type Lister interface {
	ListNamespace(namespace string) []*metav1.PartialObjectMetadata
}

// Resource is a namespaced resource to empty, with its cache.
type Resource struct {
	GVR     schema.GroupVersionResource
	Objects Lister
}

func (r Resource) validate() error {
	inf, isInformer := r.Objects.(*informer.Informer[*metav1.PartialObjectMetadata])
	if r.GVR.Version == "" || r.GVR.Resource == "" || r.Objects == nil || (isInformer && inf == nil) {
		return fmt.Errorf("namespace: resource %v needs a version, a plural and a cache", r.GVR)
	}
	return nil
}

// Config configures a Controller.
type Config struct {
	// Namespaces is the namespaces' cache.
	Namespaces *informer.Informer[*corev1.Namespace]
	// Resources are every namespaced resource the server serves (more may
	// be added at runtime: AddResource).
	Resources []Resource
	// Client writes namespace status, finalize and delete.
	Client kubernetes.Interface
	// Metadata deletes collections and makes the final check for content.
	Metadata metadata.Interface
	// Recorder, when set, records Warning events for failures.
	Recorder record.EventRecorder
	// PollInterval is how often content is looked for again (default
	// DefaultPollInterval).
	PollInterval time.Duration
	// WriteConditions writes the deletion conditions to the namespace's
	// status on every pass that changes them, as upstream does.
	WriteConditions bool
	// Workers reconcile namespaces in parallel (default 2).
	Workers int
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now defaults to time.Now (condition transition times).
	Now func() time.Time
}

func (c *Config) validate() error {
	switch {
	case c.Namespaces == nil:
		return errors.New("namespace: Namespaces is required")
	case c.Client == nil:
		return errors.New("namespace: Client is required")
	case c.Metadata == nil:
		return errors.New("namespace: Metadata is required")
	case len(c.Resources) == 0:
		return errors.New("namespace: Resources is empty")
	}
	for _, r := range c.Resources {
		if err := r.validate(); err != nil {
			return err
		}
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.Workers <= 0 {
		c.Workers = 2
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// Controller is the namespace controller (a controllers.Runnable).
type Controller struct {
	cfg  Config
	log  *slog.Logger
	ctrl *controllers.Controller
	// mu guards the resources of Config.Resources and those added at
	// runtime (runtime.go), by GVR; each pass reads a snapshot of them.
	mu        sync.RWMutex
	resources []Resource
	added     map[schema.GroupVersionResource]bool
}

var (
	_ controllers.Runnable   = (*Controller)(nil)
	_ controllers.Reconciler = (*Controller)(nil)
)

// New creates the controller and adds its handler to the namespaces' cache.
func New(cfg Config) (*Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Controller{cfg: cfg, log: cfg.Logger.With("controller", "namespace"),
		resources: slices.Clone(cfg.Resources), added: map[schema.GroupVersionResource]bool{}}
	c.ctrl = controllers.New("namespace", c, controllers.Options{Workers: cfg.Workers, Logger: cfg.Logger})
	enqueue := func(ns *corev1.Namespace) {
		if ns.DeletionTimestamp != nil {
			c.ctrl.Enqueue(controllers.Request{Name: ns.Name})
		}
	}
	cfg.Namespaces.AddHandler(informer.HandlerFuncs[*corev1.Namespace]{
		AddFunc:    enqueue,
		UpdateFunc: func(_, ns *corev1.Namespace) { enqueue(ns) },
	})
	return c, nil
}

// Run reconciles until ctx ends (controllers.Runnable).
func (c *Controller) Run(ctx context.Context) {
	c.log.Debug("namespace controller starting", "resources", len(c.snapshot()))
	c.ctrl.Run(ctx)
}

// Reconcile makes one pass over a namespace (controllers.Reconciler).
func (c *Controller) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	ns, ok := c.cfg.Namespaces.Get("", req.Name)
	if !ok || ns.DeletionTimestamp == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		return controllers.Result{}, nil
	}
	resources := c.snapshot()
	contents := make([]content, 0, len(resources))
	for _, r := range resources {
		contents = append(contents, content{gvr: r.GVR, objects: r.Objects.ListNamespace(ns.Name)})
	}
	p := planPass(contents)
	failures := c.deleteCollections(ctx, ns, p.Delete)
	if p.Empty() && len(failures) == 0 {
		left, err := c.confirmEmpty(ctx, ns.Name, resources)
		if err != nil {
			return controllers.Result{}, err
		}
		if len(left) == 0 {
			return controllers.Result{}, c.finalize(ctx, ns)
		}
		c.log.Debug("the API holds content the caches do not show yet", "namespace", ns.Name, "resources", left)
		for _, gvr := range left {
			p.Remaining[gvr.GroupResource().String()]++ // at least one
		}
		failures = c.deleteCollections(ctx, ns, left)
	}
	if c.cfg.WriteConditions {
		if err := c.setConditions(ctx, ns, conditions(p, failures)); err != nil {
			return controllers.Result{}, err
		}
	}
	if len(failures) > 0 {
		return controllers.Result{}, fmt.Errorf("namespace %s: deleting %d collections failed", ns.Name, len(failures))
	}
	c.log.Debug("namespace content remains", "namespace", ns.Name, "remaining", p.Remaining)
	return controllers.Result{RequeueAfter: c.cfg.PollInterval}, nil
}

// deleteCollections deletes every object of the resources in the
// namespace, and returns a description of each failure.
func (c *Controller) deleteCollections(ctx context.Context, ns *corev1.Namespace, gvrs []schema.GroupVersionResource) []string {
	background := metav1.DeletePropagationBackground
	var failures []string
	for _, gvr := range gvrs {
		err := c.cfg.Metadata.Resource(gvr).Namespace(ns.Name).DeleteCollection(ctx,
			metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			continue
		}
		failures = append(failures, fmt.Sprintf("%s: %v", gvr.GroupResource(), err))
		c.warn(ns, ReasonDeleteContentFailed, "deleting every %s in namespace %s: %v", gvr.GroupResource(), ns.Name, err)
	}
	return failures
}

// confirmEmpty asks the API, one object per resource, whether anything is
// left in the namespace, and returns the resources that hold some.
func (c *Controller) confirmEmpty(ctx context.Context, ns string, resources []Resource) ([]schema.GroupVersionResource, error) {
	var left []schema.GroupVersionResource
	for _, r := range resources {
		list, err := c.cfg.Metadata.Resource(r.GVR).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return nil, fmt.Errorf("listing %s in namespace %s: %w", r.GVR.GroupResource(), ns, err)
		}
		if len(list.Items) > 0 {
			left = append(left, r.GVR)
		}
	}
	return left, nil
}

// finalize removes the "kubernetes" finalizer from the emptied namespace and
// deletes it again, so the API server removes it.
func (c *Controller) finalize(ctx context.Context, cached *corev1.Namespace) error {
	nsc := c.cfg.Client.CoreV1().Namespaces()
	ns, err := nsc.Get(ctx, cached.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading namespace %s: %w", cached.Name, err)
	case ns.UID != cached.UID || ns.DeletionTimestamp == nil:
		return nil // another namespace by now
	}
	if slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		ns.Spec.Finalizers = withoutFinalizer(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
		out, err := nsc.Finalize(ctx, ns, metav1.UpdateOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case apierrors.IsConflict(err):
			return fmt.Errorf("finalizing namespace %s: %w", ns.Name, err)
		case err != nil:
			return c.failed(ns, fmt.Errorf("finalizing namespace %s: %w", ns.Name, err))
		}
		ns = out
	}
	if len(ns.Spec.Finalizers) > 0 {
		c.log.Info("namespace emptied; other finalizers remain", "namespace", ns.Name, "finalizers", ns.Spec.Finalizers)
		return nil
	}
	uid := ns.UID
	err = nsc.Delete(ctx, ns.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	switch {
	case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err): // a conflict: the UID changed, it is gone
		c.log.Info("namespace emptied and finalized", "namespace", ns.Name)
		return nil
	}
	return c.failed(ns, fmt.Errorf("deleting the finalized namespace %s: %w", ns.Name, err))
}

// setConditions writes the deletion conditions when they changed.
func (c *Controller) setConditions(ctx context.Context, ns *corev1.Namespace, set []corev1.NamespaceCondition) error {
	conds, changed := mergeConditions(ns.Status.Conditions, set, metav1.NewTime(c.cfg.Now().Truncate(time.Second)))
	if !changed {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
	if err != nil {
		return err
	}
	_, err = c.cfg.Client.CoreV1().Namespaces().Patch(ctx, ns.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("setting the conditions of namespace %s: %w", ns.Name, err)
	}
	return nil
}

func (c *Controller) failed(ns *corev1.Namespace, err error) error {
	c.warn(ns, ReasonFinalizeFailed, "%v", err)
	return err
}

func (c *Controller) warn(ns *corev1.Namespace, reason, format string, args ...any) {
	if c.cfg.Recorder == nil {
		return
	}
	ref := &corev1.ObjectReference{Kind: "Namespace", APIVersion: "v1", Name: ns.Name, UID: ns.UID}
	c.cfg.Recorder.Eventf(ref, corev1.EventTypeWarning, reason, format, args...)
}

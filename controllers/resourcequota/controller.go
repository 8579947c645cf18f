package resourcequota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/apiserver/quota"
	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

// Name is the controller's name.
const Name = "resourcequota"

// DefaultResync is how often every quota is recomputed from scratch
// (upstream's --resource-quota-sync-period).
const DefaultResync = 5 * time.Minute

// Source is the part of a cache the controller reads: one resource's
// objects by namespace, and its changes.
type Source[T runtime.Object] interface {
	ListNamespace(namespace string) []T
	AddHandler(h informer.Handler[T])
}

// QuotaSource is the ResourceQuotas' cache.
type QuotaSource interface {
	Source[*corev1.ResourceQuota]
	Get(namespace, name string) (*corev1.ResourceQuota, bool)
	List() []*corev1.ResourceQuota
}

// typed are the resources whose quota usage depends on more than their
// metadata: quota.Usage needs their typed objects, and a metadata cache
// of them would make every quota that limits them fail to sync.
var typed = []schema.GroupResource{quota.Pods, quota.Services, quota.PersistentVolumeClaims}

// Typed reports whether gr is counted from one of Config's typed caches
// (Pods, Services, Claims) and so must not be among Config.Objects.
func Typed(gr schema.GroupResource) bool { return slices.Contains(typed, gr) }

// Config configures the controller.
type Config struct {
	Client kubernetes.Interface
	Quotas QuotaSource
	// Pods, Services and Claims (PersistentVolumeClaims) are counted from
	// their typed caches: their usage depends on their spec and status (see
	// Typed).
	Pods     Source[*corev1.Pod]
	Services Source[*corev1.Service]
	Claims   Source[*corev1.PersistentVolumeClaim]
	// Objects are the other namespaced resources, counted by object
	// (count/<resource>.<group>, and the legacy configmaps, secrets and
	// resourcequotas), from metadata caches. A resource left out is not
	// counted unless added at runtime (AddResource); a Typed one may not be
	// given here.
	Objects map[schema.GroupResource]Source[*metav1.PartialObjectMetadata]
	// Resync is how often every quota is recomputed (default
	// DefaultResync).
	Resync time.Duration
	// Now is the clock pods' deletion grace is measured by (default
	// time.Now).
	Now     func() time.Time
	Options controllers.Options
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("resourcequota: Client is required")
	case c.Quotas == nil || c.Pods == nil || c.Services == nil || c.Claims == nil:
		return errors.New("resourcequota: the Quotas, Pods, Services and Claims caches are required")
	}
	for gr := range c.Objects {
		if Typed(gr) {
			return fmt.Errorf("resourcequota: %s is counted from its typed cache, not from Objects", gr)
		}
	}
	if c.Resync == 0 {
		c.Resync = DefaultResync
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Options.Logger == nil {
		c.Options.Logger = slog.Default()
	}
	return nil
}

// Controller is the quota controller; run it while leading.
type Controller struct {
	ctrl   *controllers.Controller
	quotas QuotaSource
	resync time.Duration
	log    *slog.Logger
	// static are Config.Objects' resources; rt those added at runtime.
	static map[schema.GroupResource]bool
	rt     *runtimeSources
}

var _ controllers.Runnable = (*Controller)(nil)

// New builds the controller and registers its handlers on the caches: call
// it before they run.
func New(cfg Config) (*Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := cfg.Options.Logger.With("controller", Name)
	rt := newRuntimeSources()
	r := &reconciler{client: cfg.Client, quotas: cfg.Quotas, pods: cfg.Pods, services: cfg.Services, claims: cfg.Claims, objects: cfg.Objects,
		runtime: rt, now: cfg.Now, log: log}
	c := &Controller{ctrl: controllers.New(Name, r, cfg.Options), quotas: cfg.Quotas, resync: cfg.Resync, log: log,
		static: staticSet(cfg.Objects), rt: rt}
	c.register(cfg)
	return c, nil
}

// Run reconciles quotas until ctx ends, enqueueing every quota at once and
// then every Resync.
func (c *Controller) Run(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(c.resync)
		defer t.Stop()
		for {
			c.enqueueAll()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	c.ctrl.Run(ctx)
	<-done
}

func (c *Controller) enqueueAll() {
	for _, q := range c.quotas.List() {
		c.ctrl.EnqueueObject(q)
	}
}

// register adds the handlers: a quota is recomputed when its spec changes,
// and the quotas of a namespace that count a resource when an object of it
// is deleted or stops using what it was charged (a pod finishing, a
// service changing type, a claim's allocated storage changing).
func (c *Controller) register(cfg Config) {
	cfg.Quotas.AddHandler(informer.HandlerFuncs[*corev1.ResourceQuota]{
		AddFunc: func(q *corev1.ResourceQuota) { c.ctrl.EnqueueObject(q) },
		UpdateFunc: func(old, q *corev1.ResourceQuota) {
			if !apiequality.Semantic.DeepEqual(old.Spec, q.Spec) || !apiequality.Semantic.DeepEqual(q.Spec.Hard, q.Status.Hard) {
				c.ctrl.EnqueueObject(q)
			}
		},
	})
	cfg.Pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{
		UpdateFunc: func(old, p *corev1.Pod) {
			now := cfg.Now()
			if quota.Charged(old, now) && !quota.Charged(p, now) {
				c.replenish(quota.Pods, p.Namespace)
			}
		},
		DeleteFunc: func(p *corev1.Pod) { c.replenish(quota.Pods, p.Namespace) },
	})
	cfg.Services.AddHandler(informer.HandlerFuncs[*corev1.Service]{
		UpdateFunc: func(old, s *corev1.Service) {
			if old.Spec.Type != s.Spec.Type || len(old.Spec.Ports) != len(s.Spec.Ports) {
				c.replenish(quota.Services, s.Namespace)
			}
		},
		DeleteFunc: func(s *corev1.Service) { c.replenish(quota.Services, s.Namespace) },
	})
	cfg.Claims.AddHandler(informer.HandlerFuncs[*corev1.PersistentVolumeClaim]{
		UpdateFunc: func(old, pvc *corev1.PersistentVolumeClaim) {
			if claimUsageChanged(old, pvc) {
				c.replenish(quota.PersistentVolumeClaims, pvc.Namespace)
			}
		},
		DeleteFunc: func(pvc *corev1.PersistentVolumeClaim) { c.replenish(quota.PersistentVolumeClaims, pvc.Namespace) },
	})
	for gr, src := range cfg.Objects {
		src.AddHandler(informer.HandlerFuncs[*metav1.PartialObjectMetadata]{
			DeleteFunc: func(m *metav1.PartialObjectMetadata) { c.replenish(gr, m.Namespace) },
		})
	}
}

// claimUsageChanged reports whether a claim's update changes what it is
// charged (its storage, which the allocated size can bring down after a
// failed expansion is recovered from). Admission only charges increases,
// so the controller must recount on any change.
func claimUsageChanged(old, pvc *corev1.PersistentVolumeClaim) bool {
	var zero time.Time // claims' usage does not depend on the time
	before, err1 := quota.Usage(quota.PersistentVolumeClaims, old, zero)
	after, err2 := quota.Usage(quota.PersistentVolumeClaims, pvc, zero)
	return err1 != nil || err2 != nil || !apiequality.Semantic.DeepEqual(before, after)
}

// replenish enqueues the quotas of namespace that limit something gr is
// charged for.
func (c *Controller) replenish(gr schema.GroupResource, namespace string) {
	for _, q := range c.quotas.ListNamespace(namespace) {
		if len(quota.MatchingResources(gr, quota.Names(q.Status.Hard))) > 0 {
			c.ctrl.EnqueueObject(q)
		}
	}
}

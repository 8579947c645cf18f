package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"github.com/kubebus/kubebus/controllers/endpointutil"
	"log/slog"
	"maps"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/cache"
)

// Name is the controller's name.
const Name = "endpointslice"

// Config configures the controller.
type Config struct {
	Client   kubernetes.Interface
	Services *informer.Informer[*corev1.Service]
	Pods     *informer.Informer[*corev1.Pod]
	// EndpointSlices must have the cache.ByServiceName index.
	EndpointSlices *informer.Informer[*discoveryv1.EndpointSlice]
	// Nodes, when set, gives endpoints their node's zone
	// (topology.kubernetes.io/zone).
	Nodes *informer.Informer[*corev1.Node]
	// MaxEndpointsPerSlice defaults to DefaultMaxEndpointsPerSlice.
	MaxEndpointsPerSlice int
	Options              controllers.Options
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("endpointslice: Client is required")
	case c.Services == nil || c.Pods == nil || c.EndpointSlices == nil:
		return errors.New("endpointslice: the Services, Pods and EndpointSlices informers are required")
	case c.MaxEndpointsPerSlice < 0 || c.MaxEndpointsPerSlice > MaxEndpointsPerSlice:
		return fmt.Errorf("endpointslice: MaxEndpointsPerSlice %d is not within 1..%d", c.MaxEndpointsPerSlice, MaxEndpointsPerSlice)
	}
	if c.MaxEndpointsPerSlice == 0 {
		c.MaxEndpointsPerSlice = DefaultMaxEndpointsPerSlice
	}
	if c.Options.Logger == nil {
		c.Options.Logger = slog.Default()
	}
	return nil
}

// The parts of the caches the reconciler reads.
type (
	serviceLister interface {
		Get(namespace, name string) (*corev1.Service, bool)
		ListNamespace(ns string) []*corev1.Service
	}
	podLister interface {
		ListNamespace(ns string) []*corev1.Pod
	}
	sliceLister interface {
		Get(namespace, name string) (*discoveryv1.EndpointSlice, bool)
		ByIndex(index, value string) []*discoveryv1.EndpointSlice
	}
	nodeGetter interface {
		Get(namespace, name string) (*corev1.Node, bool)
	}
)

type reconciler struct {
	client   kubernetes.Interface
	services serviceLister
	pods     podLister
	slices   sliceLister
	nodes    nodeGetter // may be nil
	max      int
	log      *slog.Logger
}

// New builds the controller and registers its handlers on the informers:
// call it before they run. Run the result while leading.
func New(cfg Config) (*controllers.Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &reconciler{client: cfg.Client, services: cfg.Services, pods: cfg.Pods, slices: cfg.EndpointSlices,
		max: cfg.MaxEndpointsPerSlice, log: cfg.Options.Logger.With("controller", Name)}
	if cfg.Nodes != nil {
		r.nodes = cfg.Nodes
	}
	c := controllers.New(Name, r, cfg.Options)
	enqueue := func(ns, name string) { c.Enqueue(controllers.Request{Namespace: ns, Name: name}) }
	cfg.Services.AddHandler(informer.HandlerFuncs[*corev1.Service]{
		AddFunc:    func(s *corev1.Service) { enqueue(s.Namespace, s.Name) },
		UpdateFunc: func(_, s *corev1.Service) { enqueue(s.Namespace, s.Name) },
		DeleteFunc: func(s *corev1.Service) { enqueue(s.Namespace, s.Name) },
	})
	sliceChanged := func(s *discoveryv1.EndpointSlice) {
		if svc := s.Labels[discoveryv1.LabelServiceName]; svc != "" && managed(s) {
			enqueue(s.Namespace, svc)
		}
	}
	// A slice that appears is synced too, as upstream does: a sync planned
	// from a cache that did not yet hold the slice it had just created makes
	// a duplicate, and only a later sync of the service removes it.
	cfg.EndpointSlices.AddHandler(informer.HandlerFuncs[*discoveryv1.EndpointSlice]{
		AddFunc:    sliceChanged,
		UpdateFunc: func(_, s *discoveryv1.EndpointSlice) { sliceChanged(s) },
		DeleteFunc: sliceChanged,
	})
	podServices := func(pod *corev1.Pod) {
		for _, svc := range endpointutil.ServicesFor(r.services, pod) {
			enqueue(svc.Namespace, svc.Name)
		}
	}
	cfg.Pods.AddHandler(informer.HandlerFuncs[*corev1.Pod]{
		AddFunc: podServices,
		UpdateFunc: func(old, pod *corev1.Pod) {
			if !endpointutil.PodChanged(old, pod) {
				return
			}
			podServices(pod)
			if !maps.Equal(old.Labels, pod.Labels) {
				podServices(old)
			}
		},
		DeleteFunc: podServices,
	})
	return c, nil
}

// Reconcile makes the service's slices list its pods.
func (r *reconciler) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	existing := r.slices.ByIndex(cache.ByServiceName, req.Namespace+"/"+req.Name)
	svc, ok := r.services.Get(req.Namespace, req.Name)
	if !ok || !endpointutil.Selects(svc) {
		// The owner reference lets the garbage collector do this too; doing
		// it here also covers a selector that was removed.
		var errs []error
		for _, s := range existing {
			if managed(s) && s.Namespace == req.Namespace {
				errs = append(errs, r.delete(ctx, s))
			}
		}
		return controllers.Result{}, errors.Join(errs...)
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	var pods []*corev1.Pod
	for _, p := range r.pods.ListNamespace(svc.Namespace) {
		if sel.Matches(labels.Set(p.Labels)) {
			pods = append(pods, p)
		}
	}
	in := planInput{svc: svc, pods: pods, existing: existing, max: r.max,
		nameTaken: func(name string) bool { _, ok := r.slices.Get(svc.Namespace, name); return ok }}
	if r.nodes != nil {
		in.zone = func(node string) string {
			if n, ok := r.nodes.Get("", node); ok {
				return n.Labels[corev1.LabelTopologyZone]
			}
			return ""
		}
	}
	p := planSlices(in)
	if p.empty() {
		return controllers.Result{}, nil
	}
	api := r.client.DiscoveryV1().EndpointSlices(svc.Namespace)
	var errs []error
	// Create and update before deleting, so that no endpoint disappears in
	// between.
	for _, s := range p.create {
		if _, err := api.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("creating endpointslice %s/%s: %w", s.Namespace, s.Name, err))
		}
	}
	for _, s := range p.update {
		if _, err := api.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("updating endpointslice %s/%s: %w", s.Namespace, s.Name, err))
		}
	}
	if len(errs) > 0 {
		return controllers.Result{}, errors.Join(errs...)
	}
	for _, s := range p.delete {
		errs = append(errs, r.delete(ctx, s))
	}
	r.log.Debug("synced endpointslices", "service", req.String(),
		"created", len(p.create), "updated", len(p.update), "deleted", len(p.delete))
	return controllers.Result{}, errors.Join(errs...)
}

func (r *reconciler) delete(ctx context.Context, s *discoveryv1.EndpointSlice) error {
	err := r.client.DiscoveryV1().EndpointSlices(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &s.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting endpointslice %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

package endpoints

import (
	"context"
	"errors"
	"fmt"
	"github.com/kubebus/kubebus/controllers/endpointutil"
	"log/slog"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

// Name is the controller's name.
const Name = "endpoints"

// Config configures the controller.
type Config struct {
	Client    kubernetes.Interface
	Services  *informer.Informer[*corev1.Service]
	Pods      *informer.Informer[*corev1.Pod]
	Endpoints *informer.Informer[*corev1.Endpoints]
	Options   controllers.Options
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("endpoints: Client is required")
	case c.Services == nil || c.Pods == nil || c.Endpoints == nil:
		return errors.New("endpoints: the Services, Pods and Endpoints informers are required")
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
	endpointsGetter interface {
		Get(namespace, name string) (*corev1.Endpoints, bool)
	}
)

type reconciler struct {
	client    kubernetes.Interface
	services  serviceLister
	pods      podLister
	endpoints endpointsGetter
	log       *slog.Logger
}

// New builds the controller and registers its handlers on the informers:
// call it before they run. Run the result while leading.
func New(cfg Config) (*controllers.Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &reconciler{client: cfg.Client, services: cfg.Services, pods: cfg.Pods, endpoints: cfg.Endpoints,
		log: cfg.Options.Logger.With("controller", Name)}
	c := controllers.New(Name, r, cfg.Options)
	enqueue := func(obj metav1.Object) {
		c.Enqueue(controllers.Request{Namespace: obj.GetNamespace(), Name: obj.GetName()})
	}
	cfg.Services.AddHandler(informer.HandlerFuncs[*corev1.Service]{
		AddFunc:    func(s *corev1.Service) { enqueue(s) },
		UpdateFunc: func(_, s *corev1.Service) { enqueue(s) },
		DeleteFunc: func(s *corev1.Service) { enqueue(s) },
	})
	cfg.Endpoints.AddHandler(informer.HandlerFuncs[*corev1.Endpoints]{
		UpdateFunc: func(_, e *corev1.Endpoints) { enqueue(e) },
		DeleteFunc: func(e *corev1.Endpoints) { enqueue(e) },
	})
	podServices := func(pod *corev1.Pod) {
		for _, svc := range endpointutil.ServicesFor(r.services, pod) {
			enqueue(svc)
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

// Reconcile makes the service's Endpoints list its pods.
func (r *reconciler) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	cur, haveEP := r.endpoints.Get(req.Namespace, req.Name)
	svc, ok := r.services.Get(req.Namespace, req.Name)
	if !ok {
		if haveEP && cur.Labels[LabelManagedBy] == ManagedByValue {
			return controllers.Result{}, r.delete(ctx, cur)
		}
		return controllers.Result{}, nil
	}
	if !endpointutil.Selects(svc) {
		return controllers.Result{}, nil // the user manages this service's Endpoints
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	var pods []*corev1.Pod
	for _, p := range r.pods.ListNamespace(svc.Namespace) {
		if sel.Matches(labels.Set(p.Labels)) {
			pods = append(pods, p)
		}
	}
	subsets, truncated := desiredSubsets(svc, pods)
	want := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace, Labels: desiredLabels(svc)},
		Subsets:    subsets,
	}
	if haveEP {
		want.ObjectMeta = *cur.ObjectMeta.DeepCopy()
		want.Labels = desiredLabels(svc)
	}
	if truncated {
		metav1.SetMetaDataAnnotation(&want.ObjectMeta, AnnotationOverCapacity, "truncated")
	} else {
		delete(want.Annotations, AnnotationOverCapacity)
	}
	if !haveEP {
		_, err := r.client.CoreV1().Endpoints(svc.Namespace).Create(ctx, want, metav1.CreateOptions{})
		if err != nil {
			return controllers.Result{}, fmt.Errorf("creating endpoints %s: %w", req, err)
		}
		r.log.Debug("created endpoints", "service", req.String())
		return controllers.Result{}, nil
	}
	if apiequality.Semantic.DeepEqual(cur.Subsets, want.Subsets) && maps.Equal(cur.Labels, want.Labels) &&
		maps.Equal(cur.Annotations, want.Annotations) {
		return controllers.Result{}, nil
	}
	if _, err := r.client.CoreV1().Endpoints(svc.Namespace).Update(ctx, want, metav1.UpdateOptions{}); err != nil {
		return controllers.Result{}, fmt.Errorf("updating endpoints %s: %w", req, err)
	}
	r.log.Debug("updated endpoints", "service", req.String())
	return controllers.Result{}, nil
}

func (r *reconciler) delete(ctx context.Context, ep *corev1.Endpoints) error {
	err := r.client.CoreV1().Endpoints(ep.Namespace).Delete(ctx, ep.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &ep.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting endpoints %s/%s: %w", ep.Namespace, ep.Name, err)
	}
	return nil
}

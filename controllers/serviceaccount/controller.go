package serviceaccount

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

// Name is the controller's name, as upstream's --controllers knows it.
const Name = "serviceaccount"

// DefaultName is the ServiceAccount every namespace gets.
const DefaultName = "default"

// Config configures the controller.
type Config struct {
	Client          kubernetes.Interface
	Namespaces      *informer.Informer[*corev1.Namespace]
	ServiceAccounts *informer.Informer[*corev1.ServiceAccount]
	// Names are the ServiceAccounts each namespace gets (default
	// [DefaultName]).
	Names   []string
	Options controllers.Options
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("serviceaccount: Client is required")
	case c.Namespaces == nil || c.ServiceAccounts == nil:
		return errors.New("serviceaccount: the Namespaces and ServiceAccounts informers are required")
	}
	if len(c.Names) == 0 {
		c.Names = []string{DefaultName}
	}
	if c.Options.Logger == nil {
		c.Options.Logger = slog.Default()
	}
	return nil
}

// The parts of the caches the reconciler reads.
type (
	namespaceGetter interface {
		Get(namespace, name string) (*corev1.Namespace, bool)
	}
	serviceAccountGetter interface {
		Get(namespace, name string) (*corev1.ServiceAccount, bool)
	}
)

type reconciler struct {
	client          kubernetes.Interface
	namespaces      namespaceGetter
	serviceAccounts serviceAccountGetter
	names           []string
	log             *slog.Logger
}

// New builds the controller, whose keys are namespace names, and registers
// its handlers on the informers: call it before they run.
func New(cfg Config) (*controllers.Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &reconciler{client: cfg.Client, namespaces: cfg.Namespaces, serviceAccounts: cfg.ServiceAccounts,
		names: cfg.Names, log: cfg.Options.Logger.With("controller", Name)}
	c := controllers.New(Name, r, cfg.Options)
	cfg.Namespaces.AddHandler(informer.HandlerFuncs[*corev1.Namespace]{
		AddFunc:    func(ns *corev1.Namespace) { c.Enqueue(controllers.Request{Name: ns.Name}) },
		UpdateFunc: func(_, ns *corev1.Namespace) { c.Enqueue(controllers.Request{Name: ns.Name}) },
	})
	cfg.ServiceAccounts.AddHandler(informer.HandlerFuncs[*corev1.ServiceAccount]{
		DeleteFunc: func(sa *corev1.ServiceAccount) { c.Enqueue(controllers.Request{Name: sa.Namespace}) },
	})
	return c, nil
}

// Reconcile creates the missing ServiceAccounts of namespace req.Name.
func (r *reconciler) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	ns, ok := r.namespaces.Get("", req.Name)
	if !ok || ns.Status.Phase != corev1.NamespaceActive || ns.DeletionTimestamp != nil {
		return controllers.Result{}, nil
	}
	for _, name := range r.names {
		if _, ok := r.serviceAccounts.Get(ns.Name, name); ok {
			continue
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name}}
		_, err := r.client.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{})
		switch {
		case err == nil:
			r.log.Debug("created service account", "namespace", ns.Name, "name", name)
		case apierrors.IsAlreadyExists(err):
			// The cache lags; the object is there.
		case apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			return controllers.Result{}, nil // the namespace is gone or going
		default:
			return controllers.Result{}, fmt.Errorf("creating service account %s/%s: %w", ns.Name, name, err)
		}
	}
	return controllers.Result{}, nil
}

package rootcacert

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

// Name is the controller's name, as upstream's --controllers knows it.
const Name = "root-ca-cert-publisher"

// The published ConfigMap, as upstream.
const (
	ConfigMapName         = "kube-root-ca.crt"
	DataKey               = "ca.crt"
	DescriptionAnnotation = "kubernetes.io/description"
	Description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Config configures the controller.
type Config struct {
	Client     kubernetes.Interface
	Namespaces *informer.Informer[*corev1.Namespace]
	ConfigMaps *informer.Informer[*corev1.ConfigMap]
	// RootCA is the CA bundle (PEM) clients verify the API server with.
	RootCA  []byte
	Options controllers.Options
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("rootcacert: Client is required")
	case c.Namespaces == nil || c.ConfigMaps == nil:
		return errors.New("rootcacert: the Namespaces and ConfigMaps informers are required")
	case len(c.RootCA) == 0:
		return errors.New("rootcacert: RootCA is empty")
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
	configMapGetter interface {
		Get(namespace, name string) (*corev1.ConfigMap, bool)
	}
)

type reconciler struct {
	client     kubernetes.Interface
	namespaces namespaceGetter
	configMaps configMapGetter
	data       map[string]string
	log        *slog.Logger
}

// New builds the controller, whose keys are namespace names, and registers
// its handlers on the informers: call it before they run.
func New(cfg Config) (*controllers.Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &reconciler{client: cfg.Client, namespaces: cfg.Namespaces, configMaps: cfg.ConfigMaps,
		data: map[string]string{DataKey: string(cfg.RootCA)}, log: cfg.Options.Logger.With("controller", Name)}
	c := controllers.New(Name, r, cfg.Options)
	cfg.Namespaces.AddHandler(informer.HandlerFuncs[*corev1.Namespace]{
		AddFunc: func(ns *corev1.Namespace) { c.Enqueue(controllers.Request{Name: ns.Name}) },
		UpdateFunc: func(_, ns *corev1.Namespace) {
			if ns.Status.Phase == corev1.NamespaceActive {
				c.Enqueue(controllers.Request{Name: ns.Name})
			}
		},
	})
	ours := func(cm *corev1.ConfigMap) {
		if cm.Name == ConfigMapName {
			c.Enqueue(controllers.Request{Name: cm.Namespace})
		}
	}
	cfg.ConfigMaps.AddHandler(informer.HandlerFuncs[*corev1.ConfigMap]{
		UpdateFunc: func(_, cm *corev1.ConfigMap) { ours(cm) },
		DeleteFunc: ours,
	})
	return c, nil
}

// Reconcile creates or restores the kube-root-ca.crt ConfigMap of
// namespace req.Name.
func (r *reconciler) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	ns, ok := r.namespaces.Get("", req.Name)
	if !ok || ns.Status.Phase != corev1.NamespaceActive || ns.DeletionTimestamp != nil {
		return controllers.Result{}, nil
	}
	cm, ok := r.configMaps.Get(ns.Name, ConfigMapName)
	if !ok {
		_, err := r.client.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: ns.Name, Annotations: map[string]string{DescriptionAnnotation: Description}},
			Data:       maps.Clone(r.data),
		}, metav1.CreateOptions{})
		switch {
		case err == nil:
			r.log.Debug("published the root CA", "namespace", ns.Name)
		case apierrors.IsAlreadyExists(err):
			// The cache lags: the update event that follows brings it back.
		case apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			// The namespace is gone or going.
		default:
			return controllers.Result{}, fmt.Errorf("creating configmap %s/%s: %w", ns.Name, ConfigMapName, err)
		}
		return controllers.Result{}, nil
	}
	if maps.Equal(cm.Data, r.data) && cm.Annotations[DescriptionAnnotation] != "" {
		return controllers.Result{}, nil
	}
	cm = cm.DeepCopy()
	cm.Data = maps.Clone(r.data)
	metav1.SetMetaDataAnnotation(&cm.ObjectMeta, DescriptionAnnotation, Description)
	if _, err := r.client.CoreV1().ConfigMaps(ns.Name).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return controllers.Result{}, fmt.Errorf("restoring configmap %s/%s: %w", ns.Name, ConfigMapName, err)
	}
	r.log.Debug("restored the root CA", "namespace", ns.Name)
	return controllers.Result{}, nil
}

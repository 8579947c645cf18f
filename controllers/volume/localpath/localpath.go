// Package localpath is kubebus's built-in dynamic provisioner for
// node-local directories, as k3s's local-path provisioner: for a claim of a
// class whose provisioner is kubebus.io/local-path, once the scheduler has
// selected a node for the claim's first pod, it creates a hostPath
// PersistentVolume pinned to that node (node affinity on
// kubernetes.io/hostname) whose directory, <root>/<pv>_<namespace>_<claim>,
// the kubelet creates when it mounts it. The binder then binds the claim
// to it. At start it creates the default StorageClass local-path when
// missing.
//
// Deleting a volume deletes the PersistentVolume object only: the
// directory stays on the node (nothing in the control plane can reach a
// node's filesystem), to be removed by an administrator.
//
// Plan (plan.go) is the pure decision; Reconcile reads the caches and
// creates the volume.
package localpath

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
	"github.com/kubebus/kubebus/controllers/volume"
)

// Name is the controller's name (for --controllers and logs).
const Name = "local-path-provisioner"

// Config configures the provisioner.
type Config struct {
	Client  kubernetes.Interface
	Claims  volume.Lister[*corev1.PersistentVolumeClaim]
	Volumes volume.Lister[*corev1.PersistentVolume]
	Classes volume.Lister[*storagev1.StorageClass]
	// Root is the directory on the nodes volumes are made under (default
	// DefaultRoot).
	Root string
	// Recorder records Provisioning, ProvisioningSucceeded and
	// ProvisioningFailed on claims (upstream's component is the
	// provisioner's name).
	Recorder record.EventRecorder
	Logger   *slog.Logger
	// NoDefaultClass leaves the default StorageClass alone.
	NoDefaultClass bool
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("localpath: Client is required")
	case c.Claims == nil || c.Volumes == nil || c.Classes == nil:
		return errors.New("localpath: the Claims, Volumes and Classes informers are required")
	case c.Recorder == nil:
		return errors.New("localpath: Recorder is required")
	}
	if c.Root == "" {
		c.Root = DefaultRoot
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Controller is the provisioner.
type Controller struct {
	*controllers.Controller
	r *reconciler
}

// New builds the provisioner and registers its handlers on the informers
// (call it before the informers run).
func New(cfg Config) (*Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &reconciler{cfg: cfg, log: cfg.Logger.With("controller", Name)}
	c := controllers.New(Name, r, controllers.Options{Workers: 2, Logger: cfg.Logger})
	r.register(c.Enqueue)
	return &Controller{Controller: c, r: r}, nil
}

// Run ensures the default StorageClass (in the background, retrying) and
// provisions until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	if !c.r.cfg.NoDefaultClass {
		go c.r.ensureDefaultClass(ctx)
	}
	c.Controller.Run(ctx)
}

type reconciler struct {
	cfg Config
	log *slog.Logger
}

var _ controllers.Reconciler = (*reconciler)(nil)

// ensureDefaultClass creates the local-path StorageClass unless a class of
// that name exists, retrying until it is there or ctx ends.
func (r *reconciler) ensureDefaultClass(ctx context.Context) {
	classes := r.cfg.Client.StorageV1().StorageClasses()
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 10*time.Second) {
		_, err := classes.Create(ctx, DefaultClass(), metav1.CreateOptions{})
		switch {
		case err == nil:
			r.log.Info("created the default StorageClass", "class", DefaultClassName)
			return
		case apierrors.IsAlreadyExists(err):
			return
		}
		r.log.Debug("creating the default StorageClass", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// register: a claim change syncs the claim; a class change syncs the
// claims of that class (a class created after its claims).
func (r *reconciler) register(enqueue func(controllers.Request)) {
	claim := func(c *corev1.PersistentVolumeClaim) { enqueue(controllers.KeyOf(c)) }
	r.cfg.Claims.AddHandler(informer.HandlerFuncs[*corev1.PersistentVolumeClaim]{
		AddFunc:    claim,
		UpdateFunc: func(_, c *corev1.PersistentVolumeClaim) { claim(c) },
	})
	r.cfg.Classes.AddHandler(informer.HandlerFuncs[*storagev1.StorageClass]{
		AddFunc: func(sc *storagev1.StorageClass) {
			if sc.Provisioner != Provisioner {
				return
			}
			for _, c := range r.cfg.Claims.List() {
				if c.Spec.VolumeName == "" && c.Spec.StorageClassName != nil && *c.Spec.StorageClassName == sc.Name {
					enqueue(controllers.KeyOf(c))
				}
			}
		},
	})
}

// Reconcile provisions a volume for the claim req names when it needs one.
func (r *reconciler) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	c, ok := r.cfg.Claims.Get(req.Namespace, req.Name)
	if !ok {
		return controllers.Result{}, nil
	}
	var class *storagev1.StorageClass
	if c.Spec.StorageClassName != nil {
		class, _ = r.cfg.Classes.Get("", *c.Spec.StorageClassName)
	}
	pv, fail := Plan(c, class, r.cfg.Root)
	if fail != "" {
		r.cfg.Recorder.Event(c, corev1.EventTypeWarning, "ProvisioningFailed", string(fail))
		return controllers.Result{}, nil
	}
	if pv == nil {
		return controllers.Result{}, nil
	}
	if _, exists := r.cfg.Volumes.Get("", pv.Name); exists {
		return controllers.Result{}, nil // provisioned; the binder binds it
	}
	key := c.Namespace + "/" + c.Name
	r.cfg.Recorder.Event(c, corev1.EventTypeNormal, "Provisioning", fmt.Sprintf("External provisioner is provisioning volume for claim %q", key))
	_, err := r.cfg.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return controllers.Result{}, nil
	case err != nil:
		r.cfg.Recorder.Event(c, corev1.EventTypeWarning, "ProvisioningFailed", fmt.Sprintf("failed to provision volume with StorageClass %q: %v", class.Name, err))
		return controllers.Result{}, fmt.Errorf("provisioning a volume for claim %s: %w", key, err)
	}
	r.log.Info("provisioned", "claim", key, "volume", pv.Name, "node", c.Annotations[volume.AnnSelectedNode], "path", pv.Spec.HostPath.Path)
	r.cfg.Recorder.Event(c, corev1.EventTypeNormal, "ProvisioningSucceeded", fmt.Sprintf("Successfully provisioned volume %s", pv.Name))
	return controllers.Result{}, nil
}

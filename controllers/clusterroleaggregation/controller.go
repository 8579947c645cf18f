package clusterroleaggregation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubebus/kubebus/bus/informer"
	"github.com/kubebus/kubebus/controllers"
)

// Name is the controller's name, as upstream's --controllers knows it.
const Name = "clusterrole-aggregation"

// Config configures the controller.
type Config struct {
	Client       kubernetes.Interface
	ClusterRoles *informer.Informer[*rbacv1.ClusterRole]
	Options      controllers.Options
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("clusterroleaggregation: Client is required")
	case c.ClusterRoles == nil:
		return errors.New("clusterroleaggregation: the ClusterRoles informer is required")
	}
	if c.Options.Logger == nil {
		c.Options.Logger = slog.Default()
	}
	return nil
}

// clusterRoleLister is the part of the ClusterRoles' cache the reconciler
// reads.
type clusterRoleLister interface {
	Get(namespace, name string) (*rbacv1.ClusterRole, bool)
	List() []*rbacv1.ClusterRole
}

type reconciler struct {
	client kubernetes.Interface
	roles  clusterRoleLister
	log    *slog.Logger
}

// New builds the controller and registers its handler on the informer:
// call it before the informer runs. Any change of any ClusterRole queues
// every aggregating ClusterRole, as upstream.
func New(cfg Config) (*controllers.Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &reconciler{client: cfg.Client, roles: cfg.ClusterRoles, log: cfg.Options.Logger.With("controller", Name)}
	c := controllers.New(Name, r, cfg.Options)
	enqueueAggregating := func(*rbacv1.ClusterRole) {
		for _, cr := range cfg.ClusterRoles.List() {
			if cr.AggregationRule != nil {
				c.Enqueue(controllers.Request{Name: cr.Name})
			}
		}
	}
	cfg.ClusterRoles.AddHandler(informer.HandlerFuncs[*rbacv1.ClusterRole]{
		AddFunc:    enqueueAggregating,
		UpdateFunc: func(_, cr *rbacv1.ClusterRole) { enqueueAggregating(cr) },
		DeleteFunc: enqueueAggregating,
	})
	return c, nil
}

// Reconcile sets the rules of the aggregating ClusterRole req.Name.
func (r *reconciler) Reconcile(ctx context.Context, req controllers.Request) (controllers.Result, error) {
	cr, ok := r.roles.Get("", req.Name)
	if !ok || cr.AggregationRule == nil {
		return controllers.Result{}, nil
	}
	for i := range cr.AggregationRule.ClusterRoleSelectors {
		if _, err := metav1.LabelSelectorAsSelector(&cr.AggregationRule.ClusterRoleSelectors[i]); err != nil {
			return controllers.Result{}, controllers.Terminal(fmt.Errorf("clusterrole %s: selector %d: %w", cr.Name, i, err))
		}
	}
	rules := Aggregate(cr, r.roles.List())
	if apiequality.Semantic.DeepEqual(rules, cr.Rules) {
		return controllers.Result{}, nil
	}
	cr = cr.DeepCopy()
	cr.Rules = rules
	if _, err := r.client.RbacV1().ClusterRoles().Update(ctx, cr, metav1.UpdateOptions{}); err != nil {
		return controllers.Result{}, fmt.Errorf("updating the rules of clusterrole %s: %w", cr.Name, err)
	}
	r.log.Debug("aggregated clusterrole", "name", cr.Name, "rules", len(rules))
	return controllers.Result{}, nil
}

package serve

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebus/kubebus/apiserver/rbac"
	"github.com/kubebus/kubebus/bus/informer"
)

// authCaches are the API server's own bus-fed caches: what the
// authorizers and admission read on every request instead of etcd (RBAC
// objects, the pods each node runs, namespaces, service accounts, limit
// ranges and quotas).
type authCaches struct {
	roles               *informer.Informer[*rbacv1.Role]
	clusterRoles        *informer.Informer[*rbacv1.ClusterRole]
	roleBindings        *informer.Informer[*rbacv1.RoleBinding]
	clusterRoleBindings *informer.Informer[*rbacv1.ClusterRoleBinding]
	pods                *informer.Informer[*corev1.Pod]
	namespaces          *informer.Informer[*corev1.Namespace]
	serviceAccounts     *informer.Informer[*corev1.ServiceAccount]
	limitRanges         *informer.Informer[*corev1.LimitRange]
	quotas              *informer.Informer[*corev1.ResourceQuota]

	all []cacheRunner
}

type cacheRunner interface {
	Run(ctx context.Context) error
	WaitForSync(ctx context.Context) error
	Revision() int64
}

// apiServerComponent names the API server's durable bus consumers.
const apiServerComponent = "kube-apiserver"

func newAuthCaches(js jetstream.JetStream, instance string, log *slog.Logger, reg prometheus.Registerer) (*authCaches, error) {
	c := &authCaches{}
	var err error
	add := func(e error) {
		if err == nil && e != nil {
			err = e
		}
	}
	c.roles, err = cacheOf(c, js, instance, log, reg, "rbac.authorization.k8s.io", "roles", func() *rbacv1.Role { return &rbacv1.Role{} })
	var e error
	c.clusterRoles, e = cacheOf(c, js, instance, log, reg, "rbac.authorization.k8s.io", "clusterroles", func() *rbacv1.ClusterRole { return &rbacv1.ClusterRole{} })
	add(e)
	c.roleBindings, e = cacheOf(c, js, instance, log, reg, "rbac.authorization.k8s.io", "rolebindings", func() *rbacv1.RoleBinding { return &rbacv1.RoleBinding{} })
	add(e)
	c.clusterRoleBindings, e = cacheOf(c, js, instance, log, reg, "rbac.authorization.k8s.io", "clusterrolebindings", func() *rbacv1.ClusterRoleBinding { return &rbacv1.ClusterRoleBinding{} })
	add(e)
	c.pods, e = cacheOf(c, js, instance, log, reg, "", "pods", func() *corev1.Pod { return &corev1.Pod{} })
	add(e)
	c.namespaces, e = cacheOf(c, js, instance, log, reg, "", "namespaces", func() *corev1.Namespace { return &corev1.Namespace{} })
	add(e)
	c.serviceAccounts, e = cacheOf(c, js, instance, log, reg, "", "serviceaccounts", func() *corev1.ServiceAccount { return &corev1.ServiceAccount{} })
	add(e)
	c.limitRanges, e = cacheOf(c, js, instance, log, reg, "", "limitranges", func() *corev1.LimitRange { return &corev1.LimitRange{} })
	add(e)
	c.quotas, e = cacheOf(c, js, instance, log, reg, "", "resourcequotas", func() *corev1.ResourceQuota { return &corev1.ResourceQuota{} })
	add(e)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func cacheOf[T runtime.Object](c *authCaches, js jetstream.JetStream, instance string, log *slog.Logger, reg prometheus.Registerer, group, resource string, newObj func() T) (*informer.Informer[T], error) {
	i, err := informer.New(informer.Config[T]{
		JetStream: js, Component: apiServerComponent, Instance: instance,
		Group: group, Resource: resource, New: newObj, Logger: log, Metrics: reg,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the %s cache: %w", resource, err)
	}
	c.all = append(c.all, i)
	return i, nil
}

// Run runs every cache until ctx ends.
func (c *authCaches) Run(ctx context.Context) error {
	return informer.RunAll(ctx, c.all)
}

// WaitForSync waits until every cache has loaded.
func (c *authCaches) WaitForSync(ctx context.Context) error {
	for _, i := range c.all {
		if err := i.WaitForSync(ctx); err != nil {
			return err
		}
	}
	return nil
}

// rbacLister reads the RBAC caches.
func (c *authCaches) rbacLister() rbac.CacheLister {
	return rbac.CacheLister{Roles: c.roles, ClusterRoles: c.clusterRoles, RoleBindings: c.roleBindings, ClusterRoleBindings: c.clusterRoleBindings}
}

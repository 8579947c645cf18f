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
// objects, the pods each node runs and the claims they use, namespaces,
// service accounts, limit ranges and quotas).
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
	// claims feed the Node authorizer's claim → volume edges.
	claims *informer.Informer[*corev1.PersistentVolumeClaim]

	all []cacheRunner
}

type cacheRunner interface {
	Run(ctx context.Context) error
	WaitForSync(ctx context.Context) error
	HasSynced() bool
}

// apiServerComponent names the API server's durable bus consumers.
const apiServerComponent = "kube-apiserver"

const rbacGroup = "rbac.authorization.k8s.io"

// newAuthCaches makes the caches; the pods cache keeps podIndexers too
// (the indexes of the components that share it, Options.PodIndexers).
func newAuthCaches(js jetstream.JetStream, instance string, log *slog.Logger, reg prometheus.Registerer, podIndexers map[string]informer.IndexFunc[*corev1.Pod]) (*authCaches, error) {
	c := &authCaches{}
	b := &cacheBuilder{c: c, js: js, instance: instance, log: log, reg: reg}
	c.roles = cacheOf(b, rbacGroup, "roles", func() *rbacv1.Role { return &rbacv1.Role{} }, nil)
	c.clusterRoles = cacheOf(b, rbacGroup, "clusterroles", func() *rbacv1.ClusterRole { return &rbacv1.ClusterRole{} }, nil)
	c.roleBindings = cacheOf(b, rbacGroup, "rolebindings", func() *rbacv1.RoleBinding { return &rbacv1.RoleBinding{} }, nil)
	c.clusterRoleBindings = cacheOf(b, rbacGroup, "clusterrolebindings", func() *rbacv1.ClusterRoleBinding { return &rbacv1.ClusterRoleBinding{} }, nil)
	c.pods = cacheOf(b, "", "pods", func() *corev1.Pod { return &corev1.Pod{} }, podIndexers)
	c.namespaces = cacheOf(b, "", "namespaces", func() *corev1.Namespace { return &corev1.Namespace{} }, nil)
	c.serviceAccounts = cacheOf(b, "", "serviceaccounts", func() *corev1.ServiceAccount { return &corev1.ServiceAccount{} }, nil)
	c.limitRanges = cacheOf(b, "", "limitranges", func() *corev1.LimitRange { return &corev1.LimitRange{} }, nil)
	c.quotas = cacheOf(b, "", "resourcequotas", func() *corev1.ResourceQuota { return &corev1.ResourceQuota{} }, nil)
	c.claims = cacheOf(b, "", "persistentvolumeclaims", func() *corev1.PersistentVolumeClaim { return &corev1.PersistentVolumeClaim{} }, nil)
	if b.err != nil {
		return nil, b.err
	}
	return c, nil
}

// cacheBuilder makes the caches, remembering the first error.
type cacheBuilder struct {
	c        *authCaches
	js       jetstream.JetStream
	instance string
	log      *slog.Logger
	reg      prometheus.Registerer
	err      error
}

// cacheOf makes one cache, with the indexes idx (nil: none).
func cacheOf[T runtime.Object](b *cacheBuilder, group, resource string, newObj func() T, idx map[string]informer.IndexFunc[T]) *informer.Informer[T] {
	if b.err != nil {
		return nil
	}
	i, err := informer.New(informer.Config[T]{
		JetStream: b.js, Component: apiServerComponent, Instance: b.instance,
		Group: group, Resource: resource, New: newObj, Logger: b.log, Metrics: b.reg,
		Indexers: idx,
	})
	if err != nil {
		b.err = fmt.Errorf("creating the %s cache: %w", resource, err)
		return nil
	}
	b.c.all = append(b.c.all, i)
	return i
}

// Run runs every cache until ctx ends.
func (c *authCaches) Run(ctx context.Context) error {
	return informer.RunAll(ctx, c.all)
}

// HasSynced reports whether every cache has loaded.
func (c *authCaches) HasSynced() bool {
	for _, i := range c.all {
		if !i.HasSynced() {
			return false
		}
	}
	return true
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

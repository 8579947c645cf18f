package rbac

import rbacv1 "k8s.io/api/rbac/v1"

// Lister reads RBAC objects from an in-memory cache: CacheLister over the
// server's bus-fed informers, or StaticLister over fixed objects. It must
// be safe for concurrent use; the objects it returns are shared and must
// not be modified.
type Lister interface {
	GetRole(namespace, name string) (*rbacv1.Role, bool)
	GetClusterRole(name string) (*rbacv1.ClusterRole, bool)
	ListRoleBindings(namespace string) []*rbacv1.RoleBinding
	ListClusterRoleBindings() []*rbacv1.ClusterRoleBinding
}

type nsName struct{ namespace, name string }

// StaticLister is a Lister over a fixed policy, for tests and fakes.
type StaticLister struct {
	roles               map[nsName]*rbacv1.Role
	clusterRoles        map[string]*rbacv1.ClusterRole
	roleBindings        map[string][]*rbacv1.RoleBinding
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
}

var _ Lister = (*StaticLister)(nil)

// NewStaticLister returns a Lister serving the objects of p. A later role
// of the same name replaces an earlier one.
func NewStaticLister(p Policy) *StaticLister {
	l := &StaticLister{
		roles:        make(map[nsName]*rbacv1.Role, len(p.Roles)),
		clusterRoles: make(map[string]*rbacv1.ClusterRole, len(p.ClusterRoles)),
		roleBindings: make(map[string][]*rbacv1.RoleBinding),
	}
	for _, r := range p.Roles {
		l.roles[nsName{r.Namespace, r.Name}] = r
	}
	for _, r := range p.ClusterRoles {
		l.clusterRoles[r.Name] = r
	}
	for _, b := range p.RoleBindings {
		l.roleBindings[b.Namespace] = append(l.roleBindings[b.Namespace], b)
	}
	l.clusterRoleBindings = append(l.clusterRoleBindings, p.ClusterRoleBindings...)
	return l
}

// GetRole implements Lister.
func (l *StaticLister) GetRole(namespace, name string) (*rbacv1.Role, bool) {
	r, ok := l.roles[nsName{namespace, name}]
	return r, ok
}

// GetClusterRole implements Lister.
func (l *StaticLister) GetClusterRole(name string) (*rbacv1.ClusterRole, bool) {
	r, ok := l.clusterRoles[name]
	return r, ok
}

// ListRoleBindings implements Lister.
func (l *StaticLister) ListRoleBindings(namespace string) []*rbacv1.RoleBinding {
	return l.roleBindings[namespace]
}

// ListClusterRoleBindings implements Lister.
func (l *StaticLister) ListClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	return l.clusterRoleBindings
}

// Cache is the part of a bus/informer.Informer[T] that CacheLister reads.
type Cache[T any] interface {
	Get(namespace, name string) (T, bool)
	List() []T
	ListNamespace(namespace string) []T
}

// CacheLister is a Lister over four informer caches.
type CacheLister struct {
	Roles               Cache[*rbacv1.Role]
	ClusterRoles        Cache[*rbacv1.ClusterRole]
	RoleBindings        Cache[*rbacv1.RoleBinding]
	ClusterRoleBindings Cache[*rbacv1.ClusterRoleBinding]
}

var _ Lister = CacheLister{}

// GetRole implements Lister.
func (l CacheLister) GetRole(namespace, name string) (*rbacv1.Role, bool) {
	return l.Roles.Get(namespace, name)
}

// GetClusterRole implements Lister.
func (l CacheLister) GetClusterRole(name string) (*rbacv1.ClusterRole, bool) {
	return l.ClusterRoles.Get("", name)
}

// ListRoleBindings implements Lister.
func (l CacheLister) ListRoleBindings(namespace string) []*rbacv1.RoleBinding {
	return l.RoleBindings.ListNamespace(namespace)
}

// ListClusterRoleBindings implements Lister.
func (l CacheLister) ListClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	return l.ClusterRoleBindings.List()
}

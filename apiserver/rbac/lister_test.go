package rbac

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// fakeCache is a Cache over a slice, as an informer holds objects.
type fakeCache[T interface {
	GetNamespace() string
	GetName() string
}] []T

func (c fakeCache[T]) Get(namespace, name string) (T, bool) {
	for _, o := range c {
		if o.GetNamespace() == namespace && o.GetName() == name {
			return o, true
		}
	}
	var zero T
	return zero, false
}

func (c fakeCache[T]) List() []T { return c }

func (c fakeCache[T]) ListNamespace(namespace string) []T {
	var out []T
	for _, o := range c {
		if o.GetNamespace() == namespace {
			out = append(out, o)
		}
	}
	return out
}

func TestCacheLister(t *testing.T) {
	t.Parallel()
	p := subjectsPolicy()
	l := CacheLister{
		Roles:               fakeCache[*rbacv1.Role](p.Roles),
		ClusterRoles:        fakeCache[*rbacv1.ClusterRole](p.ClusterRoles),
		RoleBindings:        fakeCache[*rbacv1.RoleBinding](p.RoleBindings),
		ClusterRoleBindings: fakeCache[*rbacv1.ClusterRoleBinding](p.ClusterRoleBindings),
	}
	a := NewAuthorizer(l)
	tests := []struct {
		name      string
		user      auth.User
		namespace string
		want      auth.Decision
	}{
		{"through a cluster role binding", auth.User{Name: "alice"}, "default", auth.Allow},
		{"through a role binding to a role", auth.User{Name: "dave"}, "team", auth.Allow},
		{"through a role binding to a cluster role", auth.User{Name: "f", Groups: []string{"team-members"}}, "team", auth.Allow},
		{"role binding of another namespace", auth.User{Name: "dave"}, "default", auth.NoOpinion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, _, err := a.Authorize(context.Background(), resourceAttrs(tt.user, "get", "", "pods", "", tt.namespace, "p"))
			if err != nil || d != tt.want {
				t.Errorf("Authorize = %v, %v; want %v", d, err, tt.want)
			}
		})
	}
}

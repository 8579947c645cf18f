package rbac

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// Authorizer is upstream's RBAC authorizer: a request is allowed when a
// rule of a role bound to its user allows it, looking first at the
// ClusterRoleBindings and then at the RoleBindings of the request's
// namespace. It never denies: what no rule allows gets NoOpinion.
type Authorizer struct {
	roles Lister
}

var (
	_ auth.Authorizer   = (*Authorizer)(nil)
	_ auth.RuleResolver = (*Authorizer)(nil)
)

// NewAuthorizer returns an Authorizer reading roles and bindings from l.
func NewAuthorizer(l Lister) *Authorizer {
	return &Authorizer{roles: l}
}

// Authorize implements auth.Authorizer. The reason of an Allow names the
// binding, its role and the subject that matched, as upstream:
// `RBAC: allowed by ClusterRoleBinding "NAME" of ClusterRole "ROLE" to User "USER"`.
// A NoOpinion's reason names the roles the user's bindings refer to that
// do not exist, as upstream's does
// (`RBAC: clusterrole.rbac.authorization.k8s.io "NAME" not found`), so
// that the 403 says why a binding grants nothing.
func (a *Authorizer) Authorize(_ context.Context, attrs auth.Attributes) (auth.Decision, string, error) {
	var reason string
	var missing []error
	a.visit(&attrs.User, attrs.Namespace, func(g grant) bool {
		if g.missing {
			missing = append(missing, g.missingRole())
		}
		for i := range g.rules {
			if ruleAllows(&attrs, &g.rules[i]) {
				reason = g.reason()
				return false
			}
		}
		return true
	})
	if reason != "" {
		return auth.Allow, reason, nil
	}
	if len(missing) > 0 {
		return auth.NoOpinion, "RBAC: " + utilerrors.NewAggregate(missing).Error(), nil
	}
	return auth.NoOpinion, "", nil
}

// RulesFor implements auth.RuleResolver: the rules bound to u cluster-wide
// and, when namespace is set, in namespace. incomplete is true when a
// binding refers to a role that does not exist.
func (a *Authorizer) RulesFor(_ context.Context, u auth.User, namespace string) ([]rbacv1.PolicyRule, bool, error) {
	var rules []rbacv1.PolicyRule
	incomplete := false
	a.visit(&u, namespace, func(g grant) bool {
		if g.missing {
			incomplete = true
		}
		rules = append(rules, g.rules...)
		return true
	})
	return rules, incomplete, nil
}

// grant is what one binding gives a user: the rules of its role, or
// missing when the role does not exist.
type grant struct {
	clusterBinding *rbacv1.ClusterRoleBinding // or
	binding        *rbacv1.RoleBinding
	subject        *rbacv1.Subject
	rules          []rbacv1.PolicyRule
	missing        bool
}

// missingRole is the error upstream's rule resolver reports for a binding
// whose role does not exist: the lister's NotFound of the role's kind.
func (g grant) missingRole() error {
	ref := g.roleRef()
	switch ref.Kind {
	case "Role", "ClusterRole":
		return apierrors.NewNotFound(rbacv1.Resource(strings.ToLower(ref.Kind)), ref.Name)
	}
	return fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
}

func (g grant) roleRef() rbacv1.RoleRef {
	if g.clusterBinding != nil {
		return g.clusterBinding.RoleRef
	}
	return g.binding.RoleRef
}

// reason describes the grant as upstream's rule resolver does, with %q
// quoting, built in one buffer since it is made for every allowed request.
func (g grant) reason() string {
	buf := make([]byte, 0, 160)
	buf = append(buf, "RBAC: allowed by "...)
	var ref rbacv1.RoleRef
	var namespace string
	if b := g.clusterBinding; b != nil {
		buf = append(buf, "ClusterRoleBinding "...)
		buf = strconv.AppendQuote(buf, b.Name)
		ref = b.RoleRef
	} else {
		b := g.binding
		buf = append(buf, "RoleBinding "...)
		buf = appendQuotedPair(buf, b.Name, b.Namespace)
		ref, namespace = b.RoleRef, b.Namespace
	}
	buf = append(buf, " of "...)
	buf = append(buf, ref.Kind...)
	buf = append(buf, ' ')
	buf = strconv.AppendQuote(buf, ref.Name)
	buf = append(buf, " to "...)
	buf = append(buf, g.subject.Kind...)
	buf = append(buf, ' ')
	if g.subject.Kind != rbacv1.ServiceAccountKind {
		return string(strconv.AppendQuote(buf, g.subject.Name))
	}
	if g.subject.Namespace != "" {
		namespace = g.subject.Namespace
	}
	return string(appendQuotedPair(buf, g.subject.Name, namespace))
}

// appendQuotedPair appends the quoted form of a+"/"+b without building it.
func appendQuotedPair(buf []byte, a, b string) []byte {
	buf = strconv.AppendQuote(buf, a)
	buf[len(buf)-1] = '/' // the closing quote of a
	n := len(buf)
	buf = strconv.AppendQuote(buf, b)
	return append(buf[:n], buf[n+1:]...) // drop the opening quote of b
}

// visit calls fn with each grant of a binding that applies to u, cluster
// bindings first, until fn returns false.
func (a *Authorizer) visit(u *auth.User, namespace string, fn func(grant) bool) {
	for _, b := range a.roles.ListClusterRoleBindings() {
		s := appliesTo(u, b.Subjects, "")
		if s == nil {
			continue
		}
		rules, ok := lookupRules(a.roles, b.RoleRef, "")
		if !fn(grant{clusterBinding: b, subject: s, rules: rules, missing: !ok}) {
			return
		}
	}
	if namespace == "" {
		return
	}
	for _, b := range a.roles.ListRoleBindings(namespace) {
		s := appliesTo(u, b.Subjects, namespace)
		if s == nil {
			continue
		}
		rules, ok := lookupRules(a.roles, b.RoleRef, namespace)
		if !fn(grant{binding: b, subject: s, rules: rules, missing: !ok}) {
			return
		}
	}
}

// lookupRules returns the rules of the role ref refers to from a binding
// in namespace ("" for a ClusterRoleBinding), or false when it does not
// exist.
func lookupRules(l Lister, ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, bool) {
	switch ref.Kind {
	case "Role":
		if namespace == "" {
			return nil, false
		}
		if r, ok := l.GetRole(namespace, ref.Name); ok {
			return r.Rules, true
		}
	case "ClusterRole":
		if r, ok := l.GetClusterRole(ref.Name); ok {
			return r.Rules, true
		}
	}
	return nil, false
}

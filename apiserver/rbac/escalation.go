package rbac

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// EscalationCheck stops a user from granting permissions they do not hold,
// as upstream's policy-based RBAC storage does. It admits creates and
// updates of roles, cluster roles and their bindings; other writes pass.
//
// A role may be written by a member of system:masters, by a user allowed
// the "escalate" verb on it, or by a user who already holds every rule it
// grants. Setting or changing an aggregationRule without the escalate verb
// needs full authority (the rule can gather anything). A binding may be
// written by a member of system:masters, by a user allowed the "bind" verb
// on the role it refers to, or by a user who already holds every rule of
// that role in the binding's namespace. A write that changes only owner
// references or finalizers (the garbage collector's) passes.
type EscalationCheck struct {
	Authorizer auth.Authorizer   // asks about the escalate and bind verbs
	Rules      auth.RuleResolver // the rules the writing user holds
	Roles      Lister            // the roles bindings refer to
}

var _ auth.Admitter = (*EscalationCheck)(nil)

// Resources whose writes are checked.
var (
	rolesResource               = rbacv1.SchemeGroupVersion.WithResource("roles").GroupResource()
	clusterRolesResource        = rbacv1.SchemeGroupVersion.WithResource("clusterroles").GroupResource()
	roleBindingsResource        = rbacv1.SchemeGroupVersion.WithResource("rolebindings").GroupResource()
	clusterRoleBindingsResource = rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings").GroupResource()
)

// Admit implements auth.Admitter.
func (c *EscalationCheck) Admit(ctx context.Context, req *auth.AdmissionRequest) error {
	if (req.Operation != auth.Create && req.Operation != auth.Update) || req.Subresource != "" {
		return nil
	}
	u := req.Attributes.User
	if u.InGroup(auth.SystemPrivilegedGroup) {
		return nil
	}
	if req.Operation == auth.Update && onlyGCFieldsChanged(req.Object, req.OldObject) {
		return nil
	}
	switch o := req.Object.(type) {
	case *rbacv1.Role:
		return c.admitRole(ctx, req, rolesResource, namespaceOf(req, o), o.Name, o.Rules, false)
	case *rbacv1.ClusterRole:
		aggregates := o.AggregationRule != nil
		if old, ok := req.OldObject.(*rbacv1.ClusterRole); ok && old.AggregationRule != nil {
			aggregates = true
		}
		return c.admitRole(ctx, req, clusterRolesResource, "", o.Name, o.Rules, aggregates)
	case *rbacv1.RoleBinding:
		ns := namespaceOf(req, o)
		if ns == "" {
			return apierrors.NewBadRequest("namespace is required")
		}
		return c.admitBinding(ctx, u, roleBindingsResource, ns, o.Name, o.RoleRef)
	case *rbacv1.ClusterRoleBinding:
		return c.admitBinding(ctx, u, clusterRoleBindingsResource, "", o.Name, o.RoleRef)
	}
	return nil
}

// namespaceOf is the namespace of the request, or else of the object.
func namespaceOf(req *auth.AdmissionRequest, o metav1.Object) string {
	if req.Attributes.Namespace != "" {
		return req.Attributes.Namespace
	}
	return o.GetNamespace()
}

// admitRole checks a role named name in ns granting rules. The escalate
// verb is asked about with the name in the request's URL, as upstream: a
// create POSTed to the collection has none, so a grant of escalate limited
// by resourceNames never lets a user POST a role beyond their rights. The
// admission attributes of such a create carry the new object's name,
// which is not the URL's.
func (c *EscalationCheck) admitRole(ctx context.Context, req *auth.AdmissionRequest, gr schema.GroupResource, ns, name string, rules []rbacv1.PolicyRule, aggregates bool) error {
	u := req.Attributes.User
	urlName := req.Attributes.Name
	if req.Posted {
		urlName = ""
	}
	if c.allowed(ctx, auth.Attributes{
		User: u, Verb: "escalate", ResourceRequest: true,
		APIGroup: gr.Group, APIVersion: "*", Resource: gr.Resource, Namespace: ns, Name: urlName,
	}) {
		return nil
	}
	if err := c.confirmNoEscalation(ctx, u, ns, rules); err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	if aggregates {
		if err := c.confirmNoEscalation(ctx, u, ns, fullAuthority()); err != nil {
			return apierrors.NewForbidden(gr, name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
		}
	}
	return nil
}

// admitBinding checks a binding named name in ns ("" for a cluster binding)
// referring to ref.
func (c *EscalationCheck) admitBinding(ctx context.Context, u auth.User, gr schema.GroupResource, ns, name string, ref rbacv1.RoleRef) error {
	// Binding is checked in the binding's namespace ("" for a cluster
	// binding), so that a user may be allowed to bind a ClusterRole in
	// some namespaces only.
	attrs := auth.Attributes{User: u, Verb: "bind", ResourceRequest: true, APIGroup: ref.APIGroup, Namespace: ns, Name: ref.Name}
	switch ref.Kind {
	case "Role":
		attrs.Resource = "roles"
	case "ClusterRole":
		attrs.Resource = "clusterroles"
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("unsupported role reference kind: %q", ref.Kind))
	}
	if c.allowed(ctx, attrs) {
		return nil
	}
	rules, ok := lookupRules(c.Roles, ref, ns)
	if !ok {
		return apierrors.NewNotFound(rbacv1.SchemeGroupVersion.WithResource(attrs.Resource).GroupResource(), ref.Name)
	}
	if err := c.confirmNoEscalation(ctx, u, ns, rules); err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	return nil
}

// allowed reports whether the authorizer allows attrs. An authorizer error
// counts as no: the write then needs the user's own rules to cover it.
func (c *EscalationCheck) allowed(ctx context.Context, attrs auth.Attributes) bool {
	if c.Authorizer == nil {
		return false
	}
	d, _, err := c.Authorizer.Authorize(ctx, attrs)
	return err == nil && d == auth.Allow
}

// confirmNoEscalation returns an error listing the rules u does not hold
// in namespace, in upstream's words.
func (c *EscalationCheck) confirmNoEscalation(ctx context.Context, u auth.User, namespace string, rules []rbacv1.PolicyRule) error {
	owned, _, resolveErr := c.Rules.RulesFor(ctx, u, namespace)
	covered, missing := validation.Covers(owned, rules)
	if covered {
		return nil
	}
	var descs []string
	for _, r := range compactRules(missing) {
		descs = append(descs, compactString(r))
	}
	slices.Sort(descs)
	descs = slices.Compact(descs)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", u.Name, u.Groups, strings.Join(descs, "\n"))
	if resolveErr != nil {
		msg += fmt.Sprintf("; resolution errors: %v", resolveErr)
	}
	return errors.New(msg)
}

// fullAuthority is everything: cluster-admin's rules.
func fullAuthority() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		newRule("*").groups("*").resources("*").rule(),
		newRule("*").urls("*").rule(),
	}
}

// compactRules merges the rules that name one API group and one resource
// and nothing but verbs, as upstream does with the broken-down rules a
// Covers check leaves over.
func compactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(rules))
	simple := map[schema.GroupResource]int{} // index into out
	for _, r := range rules {
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 || len(r.APIGroups) != 1 || len(r.Resources) != 1 {
			out = append(out, r)
			continue
		}
		gr := schema.GroupResource{Group: r.APIGroups[0], Resource: r.Resources[0]}
		if i, ok := simple[gr]; ok {
			out[i].Verbs = append(out[i].Verbs, r.Verbs...)
			continue
		}
		simple[gr] = len(out)
		out = append(out, *r.DeepCopy())
	}
	return out
}

// compactString is upstream's short form of a rule in escalation messages:
// {APIGroups:[""], Resources:["pods"], Verbs:["get"]}.
func compactString(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(name string, values []string) {
		if len(values) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", name, values))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("NonResourceURLs", r.NonResourceURLs)
	add("ResourceNames", r.ResourceNames)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}

// onlyGCFieldsChanged reports whether obj differs from old only in owner
// references and finalizers (and the bookkeeping fields a write carries),
// which the garbage collector changes without holding the role's rules.
func onlyGCFieldsChanged(obj, old runtime.Object) bool {
	if obj == nil || old == nil || reflect.ValueOf(old).IsNil() {
		return false
	}
	cp := obj.DeepCopyObject()
	m, err := meta.Accessor(cp)
	if err != nil {
		return false
	}
	o, err := meta.Accessor(old)
	if err != nil {
		return false
	}
	m.SetOwnerReferences(o.GetOwnerReferences())
	m.SetFinalizers(o.GetFinalizers())
	m.SetManagedFields(o.GetManagedFields())
	m.SetResourceVersion(o.GetResourceVersion())
	return equality.Semantic.DeepEqual(cp, old)
}

package rbac

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// RulesAllow reports whether one of rules grants the request, as
// upstream's rbac.RulesAllow (the Node authorizer's check of NodeRules).
func RulesAllow(a *auth.Attributes, rules ...rbacv1.PolicyRule) bool {
	for i := range rules {
		if ruleAllows(a, &rules[i]) {
			return true
		}
	}
	return false
}

// ruleAllows reports whether rule grants the request, as upstream's
// RuleAllows: verb, API group, resource (with its subresource) and name
// for a resource request; verb and URL for a non-resource one. It does
// not allocate.
func ruleAllows(a *auth.Attributes, rule *rbacv1.PolicyRule) bool {
	if !verbMatches(rule, a.Verb) {
		return false
	}
	if !a.ResourceRequest {
		return nonResourceURLMatches(rule, a.Path)
	}
	return apiGroupMatches(rule, a.APIGroup) &&
		resourceMatches(rule, a.Resource, a.Subresource) &&
		resourceNameMatches(rule, a.Name)
}

func verbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

func apiGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

// resourceMatches matches "*", the resource itself when there is no
// subresource, "resource/subresource" and "*/subresource". As upstream,
// "resource/*" is no wildcard: it matches only a subresource named "*".
func resourceMatches(rule *rbacv1.PolicyRule, resource, subresource string) bool {
	for _, r := range rule.Resources {
		if r == rbacv1.ResourceAll {
			return true
		}
		if subresource == "" {
			if r == resource {
				return true
			}
			continue
		}
		// r is "resource/subresource" or "*/subresource", compared
		// without building the combined string.
		head, sub, ok := strings.Cut(r, "/")
		if ok && sub == subresource && (head == resource || head == rbacv1.ResourceAll) {
			return true
		}
	}
	return false
}

func resourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	for _, n := range rule.ResourceNames {
		if n == name {
			return true
		}
	}
	return false
}

// nonResourceURLMatches matches "*", the path itself, or a prefix ending
// in "*".
func nonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}

// appliesTo returns the first subject that is u, or nil. A ServiceAccount
// subject without a namespace is in namespace (a RoleBinding's own).
func appliesTo(u *auth.User, subjects []rbacv1.Subject, namespace string) *rbacv1.Subject {
	for i := range subjects {
		if subjectMatches(u, &subjects[i], namespace) {
			return &subjects[i]
		}
	}
	return nil
}

func subjectMatches(u *auth.User, s *rbacv1.Subject, namespace string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return u.Name == s.Name
	case rbacv1.GroupKind:
		return u.InGroup(s.Name)
	case rbacv1.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = namespace
		}
		return ns != "" && isServiceAccount(u.Name, ns, s.Name)
	}
	return false
}

// isServiceAccount reports whether user is "system:serviceaccount:NS:NAME"
// without building that string.
func isServiceAccount(user, namespace, name string) bool {
	rest, ok := strings.CutPrefix(user, auth.ServiceAccountPrefix)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, namespace)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, ":")
	return ok && rest == name
}

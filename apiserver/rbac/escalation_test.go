package rbac

import (
	"context"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubebus/kubebus/apiserver/auth"
)

// escalationPolicy: "writer" may write RBAC objects in namespace "team"
// and holds "get pods" there; "escalator" may also escalate roles;
// "binder" may bind the ClusterRole "secret-reader" in "team" only.
func escalationPolicy() Policy {
	rbacWrite := newRule("create", "update").groups(rbacGroup).resources("roles", "rolebindings", "clusterroles", "clusterrolebindings").rule()
	getPods := newRule("get").groups("").resources("pods").rule()
	return Policy{
		ClusterRoles: []*rbacv1.ClusterRole{
			clusterRole("rbac-writer", rbacWrite, getPods),
			clusterRole("pod-getter", getPods),
			clusterRole("secret-reader", newRule("get", "list").groups("").resources("secrets").rule()),
			clusterRole("escalate-roles", newRule("escalate").groups(rbacGroup).resources("roles", "clusterroles").rule()),
			clusterRole("escalate-r", newRule("escalate").groups(rbacGroup).resources("roles").names("r").rule()),
			clusterRole("bind-secret-reader", newRule("bind").groups(rbacGroup).resources("clusterroles").names("secret-reader").rule()),
		},
		Roles: []*rbacv1.Role{role("team", "local-pod-getter", getPods)},
		ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			{ObjectMeta: metav1.ObjectMeta{Name: "escalators"}, RoleRef: clusterRoleRef("escalate-roles"), Subjects: []rbacv1.Subject{user("escalator")}},
		},
		RoleBindings: []*rbacv1.RoleBinding{
			roleRefBinding("team", "writers", clusterRoleRef("rbac-writer"), user("writer"), user("escalator"), user("binder")),
			roleRefBinding("team", "binders", clusterRoleRef("bind-secret-reader"), user("binder")),
			roleRefBinding("team", "named", clusterRoleRef("escalate-r"), user("named")),
		},
	}
}

func TestEscalationCheck(t *testing.T) {
	t.Parallel()
	l := NewStaticLister(escalationPolicy())
	a := NewAuthorizer(l)
	check := &EscalationCheck{Authorizer: a, Rules: a, Roles: l}

	writer := auth.User{Name: "writer", Groups: []string{auth.AllAuthenticated}}
	getPods := newRule("get").groups("").resources("pods").rule()
	getSecrets := newRule("get", "list").groups("").resources("secrets").rule()
	aggregation := &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"x": "true"}}}}

	newRole := func(ns string, rules ...rbacv1.PolicyRule) *rbacv1.Role { return role(ns, "r", rules...) }
	withFinalizer := func(r *rbacv1.Role) *rbacv1.Role { r.Finalizers = []string{"example.com/keep"}; return r }
	aggregatedRole := func(rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		r := clusterRole("agg", rules...)
		r.AggregationRule = aggregation
		return r
	}
	req := func(op auth.Operation, u auth.User, resource, ns string, obj, old runtime.Object) *auth.AdmissionRequest {
		return &auth.AdmissionRequest{Operation: op, Object: obj, OldObject: old,
			Attributes: auth.Attributes{User: u, Verb: "create", ResourceRequest: true, APIGroup: rbacGroup, Resource: resource, Namespace: ns}}
	}
	named := func(r *auth.AdmissionRequest, name string) *auth.AdmissionRequest { r.Attributes.Name = name; return r }
	posted := func(r *auth.AdmissionRequest) *auth.AdmissionRequest { r.Posted = true; return r }

	tests := []struct {
		name     string
		req      *auth.AdmissionRequest
		wantCode int32 // 0: admitted
		wantMsg  string
	}{
		{"role within held rules", req(auth.Create, writer, "roles", "team", newRole("team", getPods), nil), 0, ""},
		{"role beyond held rules", req(auth.Create, writer, "roles", "team", newRole("team", getPods, getSecrets), nil), http.StatusForbidden,
			`roles.rbac.authorization.k8s.io "r" is forbidden: user "writer" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` +
				"\n" + `{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}`},
		{"rules held in another namespace only", req(auth.Create, writer, "roles", "other", newRole("other", getPods), nil), http.StatusForbidden,
			`roles.rbac.authorization.k8s.io "r" is forbidden: user "writer" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` +
				"\n" + `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`},
		{"role update beyond held rules", req(auth.Update, writer, "roles", "team", newRole("team", getSecrets), newRole("team", getPods)), http.StatusForbidden, ""},
		{"update of finalizers only", req(auth.Update, writer, "roles", "team", withFinalizer(newRole("team", getSecrets)), newRole("team", getSecrets)), 0, ""},
		{"system:masters", req(auth.Create, auth.User{Name: "root", Groups: []string{auth.SystemPrivilegedGroup}}, "roles", "team",
			newRole("team", newRule("*").groups("*").resources("*").rule()), nil), 0, ""},
		{"escalate verb", req(auth.Create, auth.User{Name: "escalator"}, "roles", "team", newRole("team", getSecrets), nil), 0, ""},
		{"escalate verb on the named role, update", named(req(auth.Update, auth.User{Name: "named"}, "roles", "team", newRole("team", getSecrets), newRole("team")), "r"), 0, ""},
		{"escalate verb on a named role, create", req(auth.Create, auth.User{Name: "named"}, "roles", "team", newRole("team", getSecrets), nil), http.StatusForbidden, ""},
		// The server's admission attributes of a POSTed create carry the
		// new role's name; the escalate grant on that name does not count,
		// as upstream's URL names no role. A create by server-side apply
		// names it in its URL, and there the grant counts.
		{"escalate verb on a named role, POSTed create naming it", posted(named(req(auth.Create, auth.User{Name: "named"}, "roles", "team", newRole("team", getSecrets), nil), "r")), http.StatusForbidden, ""},
		{"escalate verb on a named role, applied create", named(req(auth.Create, auth.User{Name: "named"}, "roles", "team", newRole("team", getSecrets), nil), "r"), 0, ""},
		{"cluster role beyond cluster-wide rules", req(auth.Create, writer, "clusterroles", "", clusterRole("c", getPods), nil), http.StatusForbidden,
			`clusterroles.rbac.authorization.k8s.io "c" is forbidden: user "writer" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` +
				"\n" + `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`},
		{"non-resource URLs not held", req(auth.Create, writer, "clusterroles", "", clusterRole("c", newRule("get", "post").urls("/metrics").rule()), nil), http.StatusForbidden,
			`clusterroles.rbac.authorization.k8s.io "c" is forbidden: user "writer" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` +
				"\n" + `{NonResourceURLs:["/metrics"], Verbs:["get"]}` + "\n" + `{NonResourceURLs:["/metrics"], Verbs:["post"]}`},
		{"aggregation rule without escalate", req(auth.Create, writer, "clusterroles", "", aggregatedRole(), nil),
			http.StatusForbidden, `clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule`},
		{"aggregation rule removed without escalate", req(auth.Update, writer, "clusterroles", "", clusterRole("agg"), aggregatedRole()),
			http.StatusForbidden, `clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule`},
		{"aggregation rule with escalate", req(auth.Create, auth.User{Name: "escalator"}, "clusterroles", "", aggregatedRole(getSecrets), nil), 0, ""},
		{"binding to a role whose rules are held", req(auth.Create, writer, "rolebindings", "team",
			roleRefBinding("team", "b", roleRef("local-pod-getter"), user("x")), nil), 0, ""},
		{"binding to a cluster role whose rules are held", req(auth.Create, writer, "rolebindings", "team",
			roleRefBinding("team", "b", clusterRoleRef("pod-getter"), user("x")), nil), 0, ""},
		{"binding to a cluster role whose rules are not held", req(auth.Create, writer, "rolebindings", "team",
			roleRefBinding("team", "b", clusterRoleRef("secret-reader"), user("x")), nil), http.StatusForbidden,
			`rolebindings.rbac.authorization.k8s.io "b" is forbidden: user "writer" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` +
				"\n" + `{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}`},
		{"bind verb", req(auth.Create, auth.User{Name: "binder"}, "rolebindings", "team",
			roleRefBinding("team", "b", clusterRoleRef("secret-reader"), user("x")), nil), 0, ""},
		{"bind verb in another namespace", req(auth.Create, auth.User{Name: "binder"}, "rolebindings", "other",
			roleRefBinding("other", "b", clusterRoleRef("secret-reader"), user("x")), nil), http.StatusForbidden, ""},
		{"bind verb is for a cluster binding only cluster-wide", req(auth.Create, auth.User{Name: "binder"}, "clusterrolebindings", "",
			clusterBinding("secret-reader", user("x")), nil), http.StatusForbidden, ""},
		{"cluster binding by system:masters", req(auth.Create, auth.User{Name: "root", Groups: []string{auth.SystemPrivilegedGroup}}, "clusterrolebindings", "",
			clusterBinding("secret-reader", user("x")), nil), 0, ""},
		{"binding to a missing role", req(auth.Create, writer, "rolebindings", "team",
			roleRefBinding("team", "b", clusterRoleRef("nope"), user("x")), nil), http.StatusNotFound,
			`clusterroles.rbac.authorization.k8s.io "nope" not found`},
		{"binding without namespace", req(auth.Create, writer, "rolebindings", "",
			roleRefBinding("", "b", clusterRoleRef("pod-getter"), user("x")), nil), http.StatusBadRequest, "namespace is required"},
		{"deletes pass", req(auth.Delete, writer, "roles", "team", nil, newRole("team", getSecrets)), 0, ""},
		{"other resources pass", req(auth.Create, writer, "configmaps", "team", &corev1.ConfigMap{}, nil), 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := check.Admit(context.Background(), tt.req)
			if tt.wantCode == 0 {
				if err != nil {
					t.Fatalf("Admit: %v", err)
				}
				return
			}
			status, ok := err.(apierrors.APIStatus)
			if !ok {
				t.Fatalf("Admit = %v, want a status %d", err, tt.wantCode)
			}
			if got := status.Status().Code; got != tt.wantCode {
				t.Errorf("code = %d, want %d (%v)", got, tt.wantCode, err)
			}
			if tt.wantMsg != "" && err.Error() != tt.wantMsg {
				t.Errorf("message:\n%s\nwant:\n%s", err.Error(), tt.wantMsg)
			}
		})
	}
}

package rbac

import (
	"context"
	"fmt"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubebus/kubebus/apiserver/auth"
)

func serviceAccount(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

func roleRefBinding(namespace, name string, ref rbacv1.RoleRef, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, RoleRef: ref, Subjects: subjects}
}

func clusterRoleRef(name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
}

func roleRef(name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}
}

func resourceAttrs(u auth.User, verb, group, resource, subresource, namespace, name string) auth.Attributes {
	return auth.Attributes{User: u, Verb: verb, ResourceRequest: true, APIGroup: group, APIVersion: "v1",
		Resource: resource, Subresource: subresource, Namespace: namespace, Name: name}
}

func pathAttrs(u auth.User, verb, path string) auth.Attributes {
	return auth.Attributes{User: u, Verb: verb, Path: path}
}

// ruleAllowed reports whether a user granted rule by a ClusterRoleBinding
// may do a.
func ruleAllowed(t *testing.T, rule rbacv1.PolicyRule, a auth.Attributes) bool {
	t.Helper()
	p := Policy{
		ClusterRoles:        []*rbacv1.ClusterRole{clusterRole("r", rule)},
		ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{clusterBinding("r", user("alice"))},
	}
	a.User = auth.User{Name: "alice"}
	d, _, err := NewAuthorizer(NewStaticLister(p)).Authorize(context.Background(), a)
	if err != nil {
		t.Fatalf("Authorize: %v", err)
	}
	return d == auth.Allow
}

func TestRuleMatching(t *testing.T) {
	t.Parallel()
	var u auth.User // set by ruleAllowed
	tests := []struct {
		name string
		rule rbacv1.PolicyRule
		a    auth.Attributes
		want bool
	}{
		{"exact verb group resource", newRule("get").groups("").resources("pods").rule(),
			resourceAttrs(u, "get", "", "pods", "", "ns", "p"), true},
		{"other verb", newRule("get").groups("").resources("pods").rule(),
			resourceAttrs(u, "delete", "", "pods", "", "ns", "p"), false},
		{"verb star", newRule("*").groups("").resources("pods").rule(),
			resourceAttrs(u, "deletecollection", "", "pods", "", "ns", ""), true},
		{"other group", newRule("get").groups("").resources("deployments").rule(),
			resourceAttrs(u, "get", "apps", "deployments", "", "ns", "d"), false},
		{"group star", newRule("get").groups("*").resources("deployments").rule(),
			resourceAttrs(u, "get", "apps", "deployments", "", "ns", "d"), true},
		{"resource star", newRule("get").groups("").resources("*").rule(),
			resourceAttrs(u, "get", "", "secrets", "", "ns", "s"), true},
		{"resource star covers subresources", newRule("get").groups("").resources("*").rule(),
			resourceAttrs(u, "get", "", "pods", "log", "ns", "p"), true},
		{"resource does not cover its subresource", newRule("get").groups("").resources("pods").rule(),
			resourceAttrs(u, "get", "", "pods", "log", "ns", "p"), false},
		{"resource/subresource", newRule("get").groups("").resources("pods/log").rule(),
			resourceAttrs(u, "get", "", "pods", "log", "ns", "p"), true},
		{"resource/subresource is not the resource", newRule("get").groups("").resources("pods/log").rule(),
			resourceAttrs(u, "get", "", "pods", "", "ns", "p"), false},
		{"resource/subresource of another resource", newRule("get").groups("").resources("nodes/log").rule(),
			resourceAttrs(u, "get", "", "pods", "log", "ns", "p"), false},
		{"star/subresource", newRule("update").groups("*").resources("*/status").rule(),
			resourceAttrs(u, "update", "apps", "deployments", "status", "ns", "d"), true},
		{"star/subresource other subresource", newRule("update").groups("*").resources("*/status").rule(),
			resourceAttrs(u, "update", "apps", "deployments", "scale", "ns", "d"), false},
		{"star/subresource is not the resource", newRule("update").groups("*").resources("*/status").rule(),
			resourceAttrs(u, "update", "apps", "deployments", "", "ns", "d"), false},
		// As upstream, "resource/*" is no wildcard.
		{"resource/star is literal", newRule("get").groups("").resources("pods/*").rule(),
			resourceAttrs(u, "get", "", "pods", "log", "ns", "p"), false},
		{"resource name", newRule("get").groups("").resources("configmaps").names("a", "b").rule(),
			resourceAttrs(u, "get", "", "configmaps", "", "ns", "b"), true},
		{"other resource name", newRule("get").groups("").resources("configmaps").names("a").rule(),
			resourceAttrs(u, "get", "", "configmaps", "", "ns", "c"), false},
		{"resource names do not allow list", newRule("list").groups("").resources("configmaps").names("a").rule(),
			resourceAttrs(u, "list", "", "configmaps", "", "ns", ""), false},
		{"resource rule, non-resource request", newRule("get").groups("*").resources("*").rule(),
			pathAttrs(u, "get", "/healthz"), false},
		{"url exact", newRule("get").urls("/healthz").rule(),
			pathAttrs(u, "get", "/healthz"), true},
		{"url exact is not a prefix", newRule("get").urls("/healthz").rule(),
			pathAttrs(u, "get", "/healthz/etcd"), false},
		{"url prefix", newRule("get").urls("/healthz/*").rule(),
			pathAttrs(u, "get", "/healthz/etcd"), true},
		{"url prefix does not match its parent", newRule("get").urls("/healthz/*").rule(),
			pathAttrs(u, "get", "/healthz"), false},
		{"url star", newRule("get").urls("*").rule(),
			pathAttrs(u, "get", "/anything/at/all"), true},
		{"url verb", newRule("get").urls("/metrics").rule(),
			pathAttrs(u, "post", "/metrics"), false},
		{"url rule, resource request", newRule("*").urls("*").rule(),
			resourceAttrs(u, "get", "", "pods", "", "ns", "p"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ruleAllowed(t, tt.rule, tt.a); got != tt.want {
				t.Errorf("allowed = %v, want %v", got, tt.want)
			}
		})
	}
}

// subjectsPolicy grants "get pods" through bindings of several kinds.
func subjectsPolicy() Policy {
	getPods := newRule("get").groups("").resources("pods").rule()
	return Policy{
		ClusterRoles: []*rbacv1.ClusterRole{clusterRole("pod-reader", getPods)},
		Roles:        []*rbacv1.Role{role("team", "local-reader", getPods)},
		ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			{ObjectMeta: metav1.ObjectMeta{Name: "users"}, RoleRef: clusterRoleRef("pod-reader"),
				Subjects: []rbacv1.Subject{user("alice"), group("readers")}},
			{ObjectMeta: metav1.ObjectMeta{Name: "robots"}, RoleRef: clusterRoleRef("pod-reader"),
				Subjects: []rbacv1.Subject{serviceAccount("ops", "robot"), serviceAccount("", "unscoped")}},
			{ObjectMeta: metav1.ObjectMeta{Name: "ghost"}, RoleRef: clusterRoleRef("missing"),
				Subjects: []rbacv1.Subject{user("carol"), group("haunted")}},
		},
		RoleBindings: []*rbacv1.RoleBinding{
			roleRefBinding("team", "local", roleRef("local-reader"), serviceAccount("", "builder"), user("dave")),
			roleRefBinding("team", "shared", clusterRoleRef("pod-reader"), group("team-members")),
			roleRefBinding("team", "dangling", roleRef("missing"), user("erin")),
		},
	}
}

func TestAuthorize(t *testing.T) {
	t.Parallel()
	a := NewAuthorizer(NewStaticLister(subjectsPolicy()))
	sa := func(ns, name string) auth.User {
		return auth.User{Name: auth.ServiceAccountUser(ns, name), Groups: []string{auth.ServiceAccountsGroup}}
	}
	tests := []struct {
		name       string
		user       auth.User
		namespace  string
		want       auth.Decision
		wantReason string
	}{
		{"user by name", auth.User{Name: "alice"}, "default", auth.Allow,
			`RBAC: allowed by ClusterRoleBinding "users" of ClusterRole "pod-reader" to User "alice"`},
		{"user by name, cluster-wide", auth.User{Name: "alice"}, "", auth.Allow,
			`RBAC: allowed by ClusterRoleBinding "users" of ClusterRole "pod-reader" to User "alice"`},
		{"other user", auth.User{Name: "alicia"}, "default", auth.NoOpinion, ""},
		{"group", auth.User{Name: "bob", Groups: []string{"x", "readers"}}, "default", auth.Allow,
			`RBAC: allowed by ClusterRoleBinding "users" of ClusterRole "pod-reader" to Group "readers"`},
		{"a group is not a user", auth.User{Name: "readers"}, "default", auth.NoOpinion, ""},
		{"service account", sa("ops", "robot"), "default", auth.Allow,
			`RBAC: allowed by ClusterRoleBinding "robots" of ClusterRole "pod-reader" to ServiceAccount "robot/ops"`},
		{"service account of another namespace", sa("dev", "robot"), "default", auth.NoOpinion, ""},
		{"service account name prefix", sa("ops", "robot2"), "default", auth.NoOpinion, ""},
		{"service account namespace prefix", sa("ops2", "robot"), "default", auth.NoOpinion, ""},
		{"service account user name without prefix", auth.User{Name: "ops:robot"}, "default", auth.NoOpinion, ""},
		{"cluster binding subject without namespace", sa("default", "unscoped"), "default", auth.NoOpinion, ""},
		{"binding to a missing role", auth.User{Name: "carol"}, "default", auth.NoOpinion,
			`RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found`},
		{"role binding, namespace defaulted", sa("team", "builder"), "team", auth.Allow,
			`RBAC: allowed by RoleBinding "local/team" of Role "local-reader" to ServiceAccount "builder/team"`},
		{"role binding, defaulted namespace is the binding's", sa("other", "builder"), "team", auth.NoOpinion, ""},
		{"role binding user", auth.User{Name: "dave"}, "team", auth.Allow,
			`RBAC: allowed by RoleBinding "local/team" of Role "local-reader" to User "dave"`},
		{"role binding, other namespace", auth.User{Name: "dave"}, "default", auth.NoOpinion, ""},
		{"role binding, cluster-wide request", auth.User{Name: "dave"}, "", auth.NoOpinion, ""},
		{"role binding to a cluster role", auth.User{Name: "f", Groups: []string{"team-members"}}, "team", auth.Allow,
			`RBAC: allowed by RoleBinding "shared/team" of ClusterRole "pod-reader" to Group "team-members"`},
		{"role binding to a cluster role, other namespace", auth.User{Name: "f", Groups: []string{"team-members"}}, "default", auth.NoOpinion, ""},
		{"role binding to a missing role", auth.User{Name: "erin"}, "team", auth.NoOpinion,
			`RBAC: role.rbac.authorization.k8s.io "missing" not found`},
		{"two missing roles", auth.User{Name: "erin", Groups: []string{"haunted"}}, "team", auth.NoOpinion,
			`RBAC: [clusterrole.rbac.authorization.k8s.io "missing" not found, role.rbac.authorization.k8s.io "missing" not found]`},
		{"a missing role and one that allows", auth.User{Name: "carol", Groups: []string{"readers"}}, "default", auth.Allow,
			`RBAC: allowed by ClusterRoleBinding "users" of ClusterRole "pod-reader" to Group "readers"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, reason, err := a.Authorize(context.Background(), resourceAttrs(tt.user, "get", "", "pods", "", tt.namespace, "p"))
			if err != nil {
				t.Fatalf("Authorize: %v", err)
			}
			if d != tt.want || reason != tt.wantReason {
				t.Errorf("Authorize = %v %q, want %v %q", d, reason, tt.want, tt.wantReason)
			}
		})
	}
}

func TestRulesFor(t *testing.T) {
	t.Parallel()
	a := NewAuthorizer(NewStaticLister(subjectsPolicy()))
	getPods := newRule("get").groups("").resources("pods").rule()
	tests := []struct {
		name           string
		user           auth.User
		namespace      string
		want           []rbacv1.PolicyRule
		wantIncomplete bool
	}{
		{"cluster binding", auth.User{Name: "alice"}, "", []rbacv1.PolicyRule{getPods}, false},
		{"cluster binding and role binding", auth.User{Name: "alice", Groups: []string{"team-members"}}, "team",
			[]rbacv1.PolicyRule{getPods, getPods}, false},
		{"role bindings only in their namespace", auth.User{Name: "dave"}, "default", nil, false},
		{"role bindings left out cluster-wide", auth.User{Name: "dave"}, "", nil, false},
		{"role binding", auth.User{Name: "dave"}, "team", []rbacv1.PolicyRule{getPods}, false},
		{"missing cluster role", auth.User{Name: "carol"}, "", nil, true},
		{"missing role", auth.User{Name: "erin"}, "team", nil, true},
		{"nothing", auth.User{Name: "zed"}, "team", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rules, incomplete, err := a.RulesFor(context.Background(), tt.user, tt.namespace)
			if err != nil {
				t.Fatalf("RulesFor: %v", err)
			}
			if incomplete != tt.wantIncomplete {
				t.Errorf("incomplete = %v, want %v", incomplete, tt.wantIncomplete)
			}
			if !slices.EqualFunc(rules, tt.want, func(a, b rbacv1.PolicyRule) bool { return a.String() == b.String() }) {
				t.Errorf("rules = %v, want %v", rules, tt.want)
			}
		})
	}
}

// TestReasonQuoting checks the allow reason against upstream's %q
// formatting for names that need escaping.
func TestReasonQuoting(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"plain", `quo"te`, "tab\tand\\slash", "ünïcode", "bell\a"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sub := serviceAccount("", name)
			b := roleRefBinding(name, name, roleRef(name), sub)
			got := grant{binding: b, subject: &b.Subjects[0]}.reason()
			want := fmt.Sprintf("RBAC: allowed by RoleBinding %q of Role %q to ServiceAccount %q", name+"/"+name, name, name+"/"+name)
			if got != want {
				t.Errorf("reason = %s, want %s", got, want)
			}
			cb := clusterBinding(name, group(name))
			got = grant{clusterBinding: cb, subject: &cb.Subjects[0]}.reason()
			want = fmt.Sprintf("RBAC: allowed by ClusterRoleBinding %q of ClusterRole %q to Group %q", name, name, name)
			if got != want {
				t.Errorf("reason = %s, want %s", got, want)
			}
		})
	}
}

// benchPolicy is the bootstrap policy with 200 more RoleBindings in
// namespace "team", the last of which binds ServiceAccount team/builder.
func benchPolicy() Policy {
	p := Bootstrap()
	for i := range 199 {
		p.RoleBindings = append(p.RoleBindings, roleRefBinding("team", fmt.Sprintf("rb-%d", i), clusterRoleRef("edit"),
			user(fmt.Sprintf("user-%d", i)), group(fmt.Sprintf("group-%d", i)), serviceAccount("team", fmt.Sprintf("sa-%d", i))))
	}
	p.RoleBindings = append(p.RoleBindings, roleRefBinding("team", "builder", clusterRoleRef("system:aggregate-to-view"),
		serviceAccount("", "builder")))
	return p
}

func BenchmarkAuthorize(b *testing.B) {
	a := NewAuthorizer(NewStaticLister(benchPolicy()))
	node := auth.User{Name: "system:node:n1", Groups: []string{auth.NodesGroup, auth.AllAuthenticated}}
	sa := auth.User{Name: auth.ServiceAccountUser("team", "builder"),
		Groups: []string{auth.ServiceAccountsGroup, auth.ServiceAccountGroupPfx + "team", auth.AllAuthenticated}}
	cases := []struct {
		name string
		a    auth.Attributes
		want auth.Decision
	}{
		{"node/patch-pod-status", resourceAttrs(node, "patch", "", "pods", "status", "team", "p"), auth.Allow},
		{"node/delete-namespace", resourceAttrs(node, "delete", "", "namespaces", "", "", "team"), auth.NoOpinion},
		{"serviceaccount/list-pods", resourceAttrs(sa, "list", "", "pods", "", "team", ""), auth.Allow},
		{"serviceaccount/create-pods", resourceAttrs(sa, "create", "", "pods", "", "team", ""), auth.NoOpinion},
	}
	ctx := context.Background()
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if d, _, _ := a.Authorize(ctx, c.a); d != c.want {
				b.Fatalf("Authorize = %v, want %v", d, c.want)
			}
			b.ReportAllocs()
			for b.Loop() {
				_, _, _ = a.Authorize(ctx, c.a)
			}
		})
	}
}
